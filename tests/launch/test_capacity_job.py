"""A capacity job (an agentic workload in a sweep) through the real-engine path, against the fake
`docker`: the job launches its server like any job, proves it serves, runs the capacity search
with drains between levels and GPU power sampled, tears down, and writes the capacity document
where collect finds it. The commands are asserted exactly."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from launch_helpers import FakeCluster

from infermatrix.cli import main
from infermatrix.results import agentic

SWEEP = """
description: one capacity job
entries:
  - recipes: [{recipe}]
    workloads: [agentic-tiny]
    capacity: {{start: 1, max_concurrency: 2}}
"""


@pytest.fixture(autouse=True)
def _tiny_workload(add_agentic_workload) -> None:  # noqa: ANN001
    add_agentic_workload("agentic-tiny", tier=("EASY", 1, 60), duration_s=2, warmup_s=0.5,
                         sessions=8, turns=3, system_prompt_tokens=64, user_tokens=32,
                         output_tokens=16, tool_delay_s=0.05)


def plan_and_run(cluster: FakeCluster, capsys, recipe: str, run_id: str  # noqa: ANN001
                 ) -> tuple[dict, Path, dict, dict]:
    """Plan the one-entry capacity sweep for ``recipe``, run its job file as job.yml would;
    (planned job, job folder, manifest, capacity document)."""
    root = cluster.root
    (root / "matrix" / "sweeps" / "capt.yaml").write_text(SWEEP.format(recipe=recipe))
    assert main(["plan", "capt", "--root", str(root), "--format", "json"]) == 0
    plan = cluster.out.parent / "plan.json"
    plan.write_text(capsys.readouterr().out)
    (job,) = json.loads(plan.read_text())
    assert job["measurement"]["kind"] == "capacity" and job["concurrency"] == []
    rc = main(["run", str(plan), "--root", str(root), "--output-dir", str(cluster.out),
               "--run-id", run_id, "--ready-timeout", "120"])
    job_dir, manifest = cluster.manifest(run_id)
    assert rc == 0 and manifest["status"] == "ok", manifest
    assert manifest["job"] == job and manifest["ready_s"] >= 0  # the planner's job, as written
    doc = json.loads((job_dir / "capacity.json").read_text())
    assert doc["schema"] == "infermatrix-agentic-capacity"
    ident = doc["infermatrix"]
    assert (ident["simulated"], ident["run_id"], ident["job_id"]) == (False, run_id, job["id"])
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2]
    assert [lv["concurrency"] for lv in manifest["levels"]] == [1, 2]
    # drained before every level, the server's own requests completed
    assert all(lv["between"]["drain"] and lv["completed"] > 0 for lv in doc["levels"])
    (tier,) = doc["tiers"]
    assert tier["tier"]["name"] == "EASY" and tier["passing_concurrency"] == 2
    assert not tier["bounded"]  # max_concurrency reached still passing
    assert manifest["capacity"]["tiers"] == {"EASY": {"agents": 2, "bounded": False}}
    (rec,) = agentic.load_documents([cluster.out / run_id])  # what collect reads
    assert (rec.recipe, rec.tier, rec.passing_concurrency) == (recipe, "EASY", 2)
    return job, job_dir, manifest, doc


def test_docker_capacity_job(fake_cluster: FakeCluster, monkeypatch, capsys) -> None:  # noqa: ANN001
    recipe = "deepseek-v4-pro/h200-sglang-w4a16"  # AA-AgentPerf's H200 deployment, docker fleet
    path = fake_cluster.root / "benchmarks" / f"{recipe}.yaml"  # the site's HF cache folder
    path.write_text(path.read_text() + "params: {HF_CACHE: /data/hf-cache}\n")
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    job, job_dir, manifest, doc = plan_and_run(fake_cluster, capsys, recipe, "cap1")
    assert manifest["launcher"] == "docker" and doc["infermatrix"]["launcher"] == "docker"
    name = f"imx-cap1-{hashlib.sha256(job['id'].encode()).hexdigest()[:8]}-both-0"
    runs = [c for c in fake_cluster.calls("docker") if c[0] == "run"]
    assert runs == [EXPECTED_RUN(name, job["id"], "30000")]
    assert manifest["commands"] == [["docker", *runs[0]]]
    # teardown: exactly our container, before (stale) and after the job; nothing left
    assert [c for c in fake_cluster.calls("docker") if c[0] == "rm"] == [["rm", "-f", name]] * 2
    assert not list((fake_cluster.state / "containers").iterdir())
    # two fake GPUs at 300 W and 350 W, sampled while the passing level ran
    (tier,) = doc["tiers"]
    assert abs(tier["avg_power_w"] - 650) < 1 and tier["agents_per_kw"] > 0


def test_slurm_disaggregated_capacity_job(fake_cluster: FakeCluster, monkeypatch,  # noqa: ANN001
                                          capsys) -> None:  # noqa: ANN001
    recipe = "deepseek-v4-pro/b300-trtllm-nvfp4-1ctx-1gen"  # AA's B300 node: 1 ctx + 1 gen + router
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    monkeypatch.setenv("FAKEBIN_SIM_PORTS", "8000")  # the orchestrator simulates; workers are stubs
    job, job_dir, manifest, doc = plan_and_run(fake_cluster, capsys, recipe, "cap2")
    assert manifest["launcher"] == "slurm" and doc["infermatrix"]["launcher"] == "slurm"
    scope = f"imx-cap2-{hashlib.sha256(job['id'].encode()).hexdigest()[:8]}"
    assert fake_cluster.calls("salloc") == [[
        "--no-shell", f"--job-name={scope}", "--nodes=1", "--exclusive", "--partition=batch",
        "--account=infermatrix", f"--time={job['timeout_minutes']}", "--gres=gpu:8"]]
    assert fake_cluster.calls("sbatch") == []
    node, work, model = fake_cluster.node(0), job_dir / "work", "deepseek-ai/DeepSeek-V4-Pro"
    tail = ["--custom_tokenizer", "deepseek_v4", "--tool_parser", "deepseek_v4"]

    def srun(name: str, *argv: str) -> list[str]:
        return ["--jobid=1000", f"--chdir={work}/{name}", "--nodes=1", "--ntasks=1",
                f"--nodelist={node}", "--overlap", "--", *argv]

    servers = {c[1].rsplit("/", 1)[1]: c for c in fake_cluster.calls("srun") if "nvidia-smi" not in c}
    assert servers == {
        "prefill-0": srun("prefill-0", "trtllm-serve", model, "--host", node, "--port", "8002",
                          "--config", "ctx_config.yaml", *tail),
        "decode-0": srun("decode-0", "trtllm-serve", model, "--host", node, "--port", "8001",
                         "--config", "gen_config.yaml", *tail),
        "router": srun("router", "trtllm-serve", "disaggregated", "-c", "server_config.yaml",
                       "-t", "7200", "-r", "7200"),
    }
    sampler = next(c for c in fake_cluster.calls("srun") if "nvidia-smi" in c)
    assert sampler[:6] == ["--jobid=1000", "--overlap", "--nodes=1", "--ntasks=1",
                           f"--nodelist={node}", "nvidia-smi"]
    assert fake_cluster.calls("scancel") == [["1000"]]  # teardown: our allocation, nothing else


def EXPECTED_RUN(name: str, job_id: str, port: str) -> list[str]:  # noqa: N802
    """The recipe's published launch command in the fleet's container (the fleet's model cache
    and the recipe's HF_CACHE mount name the same folder here, so it is listed twice)."""
    cache = ["-v", "/data/hf-cache:/root/.cache/huggingface"]
    return [
        "run", "--name", name, "--gpus", "all", "--shm-size", "32g", "--network", "host",
        *cache, *cache, "--rm", "--label", "infermatrix.run=cap1", "--label",
        f"infermatrix.job={job_id}", "--", "lmsysorg/sglang:deepseek-v4-hopper",
        "python3", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V4-Pro",
        "--tp", "8", "--context-length", "393216", "--mem-fraction-static", "0.88",
        "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "1",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "2",
        "--moe-runner-backend", "marlin", "--host", "0.0.0.0", "--port", port,
    ]


def test_sbatch_multi_node_capacity_job(fake_cluster: FakeCluster, monkeypatch,  # noqa: ANN001
                                        capsys) -> None:  # noqa: ANN001
    recipe = "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8"  # AA's GB300: 6 ctx + 1 gen, 8 nodes
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    monkeypatch.setenv("FAKEBIN_SIM_PORTS", "8000")  # the orchestrator simulates; workers are stubs
    job, job_dir, manifest, doc = plan_and_run(fake_cluster, capsys, recipe, "cap3")
    assert manifest["launcher"] == "slurm" and doc["infermatrix"]["launcher"] == "slurm"
    scope = f"imx-cap3-{hashlib.sha256(job['id'].encode()).hexdigest()[:8]}"
    assert fake_cluster.calls("salloc") == []
    assert fake_cluster.calls("sbatch") == [["--parsable", str(job_dir / "job.sbatch")]]
    header = [ln for ln in (job_dir / "job.sbatch").read_text().splitlines()
              if ln.startswith("#SBATCH")]
    assert header == [f'#SBATCH --job-name="{scope}"', '#SBATCH --nodes="8"', "#SBATCH --exclusive",
                      '#SBATCH --partition="gb300"', '#SBATCH --account="infermatrix"',
                      f'#SBATCH --time="{job["timeout_minutes"]}"', '#SBATCH --gres="gpu:4"',
                      f'#SBATCH --output="{job_dir}/slurm-%j.log"']
    servers = {next(a for a in c if a.startswith("--chdir=")).rsplit("/", 1)[1]: c
               for c in fake_cluster.calls("srun") if "nvidia-smi" not in c}
    assert sorted(servers) == ["decode-0", *(f"prefill-{i}" for i in range(6)), "router"]
    node, work = fake_cluster.node, job_dir / "work"
    # the orchestrator on the first node; each worker on its own node(s), as published
    assert servers["router"] == [
        f"--chdir={work}/router", "--nodes=1", "--ntasks=1", f"--nodelist={node(0)}", "--overlap",
        "--", "trtllm-serve", "disaggregated", "-c", "server_config.yaml", "-t", "7200", "-r", "7200"]
    for i in range(6):
        assert servers[f"prefill-{i}"][:5] == [f"--chdir={work}/prefill-{i}", "--nodes=1",
                                               "--ntasks=1", f"--nodelist={node(i)}", "--overlap"]
    assert servers["decode-0"][:5] == ["--nodes", "2", "--ntasks", "8", "--ntasks-per-node"]
    assert fake_cluster.calls("scancel") == [["1000"]]  # teardown: our job id, nothing else
