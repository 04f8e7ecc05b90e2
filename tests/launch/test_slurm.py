"""SLURM backend against fake salloc/srun/sbatch/scancel/squeue/scontrol: the exact commands
for one aggregated single-node recipe (salloc + srun with Pyxis) and one disaggregated
multi-node recipe (sbatch + one srun per worker, the orchestrator on the first node), a real
sweep over loopback "nodes" 127.x.y.1…8, and teardown by scancel of our own job only."""

from __future__ import annotations

import hashlib
import json

import yaml
from launch_helpers import FakeCluster, run


def _scope(run_id: str, job_id: str) -> str:
    return f"imx-{run_id}-{hashlib.sha256(job_id.encode()).hexdigest()[:8]}"


def test_one_node_salloc_srun_pyxis(fake_cluster: FakeCluster, monkeypatch) -> None:  # noqa: ANN001
    recipe = "deepseek-r1-0528/b200-sglang-fp8"
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    fake_cluster.edit_fleet("b200-slurm", exclude_nodes=["bad-node-3"],
                            mounts={"/lustre/models": "/models"})
    rc = run(fake_cluster.root, fake_cluster.out, "s1", recipe, "b200-slurm", [1, 4],
             "--ready-timeout", "120")
    job_dir, manifest = fake_cluster.manifest("s1")
    assert rc == 0 and manifest["status"] == "ok", manifest
    scope = _scope("s1", manifest["job"]["id"])
    assert fake_cluster.calls("salloc") == [[
        "--no-shell", f"--job-name={scope}", "--nodes=1", "--exclusive", "--partition=batch",
        "--account=infermatrix", "--exclude=bad-node-3", f"--time={manifest['job']['timeout_minutes']}",
        "--gres=gpu:8"]]
    servers = [c for c in fake_cluster.calls("srun") if "nvidia-smi" not in c]
    assert servers == [[
        "--jobid=1000", "--nodes=1", "--ntasks=1", f"--nodelist={fake_cluster.node(0)}", "--overlap",
        "--container-image=lmsysorg/sglang:v0.4.10.post1-cu128-b200",
        f"--container-name={scope}-both-0", "--no-container-mount-home",
        "--container-mounts=/lustre/models:/models", "--",
        "python3", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-R1-0528",
        "--host", "0.0.0.0", "--port", "8000", "--trust-remote-code",
        "--tensor-parallel-size=8", "--data-parallel-size=1", "--cuda-graph-max-bs", "256",
        "--max-running-requests", "512", "--mem-fraction-static", "0.89",
        "--chunked-prefill-size", "32768", "--max-prefill-tokens", "32768",
        "--disable-radix-cache", "--attention-backend", "trtllm_mla",
        "--disable-shared-experts-fusion", "--enable-flashinfer-trtllm-moe"]]
    # the GPU sampler runs as a step of the same allocation, on the same node
    sampler = next(c for c in fake_cluster.calls("srun") if "nvidia-smi" in c)
    assert sampler[:6] == ["--jobid=1000", "--overlap", "--nodes=1", "--ntasks=1",
                           f"--nodelist={fake_cluster.node(0)}", "nvidia-smi"]
    assert fake_cluster.calls("scancel") == [["1000"]]
    for conc in (1, 4):
        result = json.loads((job_dir / f"conc-{conc}.json").read_text())
        assert result["completed"] > 0 and result["failed"] == 0
        assert result["infermatrix"]["launcher"] == "slurm"
        assert result["infermatrix"]["energy_j"] > 0


def test_multi_node_disaggregated_sbatch(fake_cluster: FakeCluster, monkeypatch) -> None:  # noqa: ANN001
    recipe = "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8"  # 6 prefill + 1 decode over 2 nodes
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    monkeypatch.setenv("FAKEBIN_SIM_PORTS", "8000")  # the orchestrator simulates; workers are stubs
    rc = run(fake_cluster.root, fake_cluster.out, "s2", recipe, "gb300-nvl72", [1, 4],
             "--ready-timeout", "120")
    job_dir, manifest = fake_cluster.manifest("s2")
    assert rc == 0 and manifest["status"] == "ok", manifest
    scope = _scope("s2", manifest["job"]["id"])
    work = job_dir / "work"

    assert fake_cluster.calls("sbatch") == [["--parsable", str(job_dir / "job.sbatch")]]
    header = [ln for ln in (job_dir / "job.sbatch").read_text().splitlines() if ln.startswith("#SBATCH")]
    assert header == [f'#SBATCH --job-name="{scope}"', '#SBATCH --nodes="8"', "#SBATCH --exclusive",
                      '#SBATCH --partition="gb300"', '#SBATCH --account="infermatrix"',
                      f'#SBATCH --time="{manifest["job"]["timeout_minutes"]}"',
                      '#SBATCH --gres="gpu:4"', f'#SBATCH --output="{job_dir}/slurm-%j.log"']
    servers = {_name(c): c for c in fake_cluster.calls("srun") if "nvidia-smi" not in c}
    tail = ["--custom_tokenizer", "deepseek_v4", "--tool_parser", "deepseek_v4"]
    model = "deepseek-ai/DeepSeek-V4-Pro"
    node = fake_cluster.node
    for i in range(6):
        assert servers[f"prefill-{i}"] == [
            f"--chdir={work}/prefill-{i}", "--nodes=1", "--ntasks=1", f"--nodelist={node(i)}",
            "--overlap", "--", "trtllm-serve", model, "--host", node(i), "--port", "8001",
            "--config", "ctx_config.yaml", *tail]
    # decode: one MPI job of 8 ranks over nodes 7 and 8
    assert servers["decode-0"] == [
        "--nodes", "2", "--ntasks", "8", "--ntasks-per-node", "4", "--nodelist",
        f"{node(6)},{node(7)}", "--mpi", "pmix", f"--chdir={work}/decode-0", "--overlap",
        "--", "trtllm-llmapi-launch", "trtllm-serve", model, "--host", node(6), "--port", "8001",
        "--config", "gen_config.yaml", *tail]
    # the orchestrator on the first node, its config naming every worker by its real node
    assert servers["router"] == [
        f"--chdir={work}/router", "--nodes=1", "--ntasks=1", f"--nodelist={node(0)}", "--overlap",
        "--", "trtllm-serve", "disaggregated", "-c", "server_config.yaml", "-t", "7200", "-r", "7200"]
    config = yaml.safe_load((work / "router" / "server_config.yaml").read_text())
    assert config["hostname"] == node(0) and config["port"] == 8000
    assert config["context_servers"]["urls"] == [f"{node(i)}:8001" for i in range(6)]
    assert config["generation_servers"]["urls"] == [f"{node(6)}:8001"]

    assert fake_cluster.calls("scancel") == [["1000"]]  # teardown: our job id, nothing else
    for conc in (1, 4):
        result = json.loads((job_dir / f"conc-{conc}.json").read_text())
        assert result["completed"] > 0 and result["failed"] == 0
        assert result["infermatrix"]["mode"] == "disaggregated"
    assert manifest["levels"][1]["drain"]["drained"] is True


def _name(srun_argv: list[str]) -> str:
    """Which process an srun started, from its working folder (…/work/<name>)."""
    chdir = next(a for a in srun_argv if a.startswith("--chdir="))
    return chdir.rsplit("/", 1)[1]
