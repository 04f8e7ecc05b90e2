"""Docker backend against a fake `docker`: the exact `docker run` of an aggregated recipe, the
sweep over real HTTP (the fake runs the simulated engine), GPU energy, and teardown."""

from __future__ import annotations

import csv
import hashlib
import json

from launch_helpers import FakeCluster, run

RECIPE = "llama-3.1-70b-instruct/h200-vllm-fp8"  # --max-num-seqs ${CONC}: one level per job


def test_docker_run_command_sweep_energy_and_teardown(fake_cluster: FakeCluster, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", RECIPE)
    monkeypatch.setenv("HF_TOKEN", "secret-token-value")
    rc = run(fake_cluster.root, fake_cluster.out, "t1", RECIPE, "h200-dgx", [4])
    job_dir, manifest = fake_cluster.manifest("t1")
    assert rc == 0, manifest
    assert manifest["status"] == "ok" and manifest["launcher"] == "docker"

    job_id = manifest["job"]["id"]
    name = f"imx-t1-{hashlib.sha256(job_id.encode()).hexdigest()[:8]}-both-0"
    runs = [c for c in fake_cluster.calls("docker") if c[0] == "run"]
    assert len(runs) == 1
    port = runs[0][runs[0].index("--port") + 1]
    assert runs[0] == [
        "run", "--name", name, "--gpus", "all", "--shm-size", "32g", "--network", "host",
        "-v", "/data/hf-cache:/root/.cache/huggingface",
        "--rm", "--label", "infermatrix.run=t1", "--label", f"infermatrix.job={job_id}",
        "-e", "HF_TOKEN",  # passed by name: the secret never reaches a command line
        "--", "kedarpotdar147/vllm0.1:latest",  # "--": the image is never read as an option
        "vllm", "serve", "nvidia/Llama-3.1-70B-Instruct-FP8", "--host", "0.0.0.0", "--port", port,
        "--trust-remote-code", "--quantization", "modelopt", "--gpu-memory-utilization", "0.9",
        "--pipeline-parallel-size", "1", "--tensor-parallel-size", "8", "--max-num-seqs", "4",
        "--max-num-batched-tokens", "8192", "--max-model-len", "10240",
        "--enable-chunked-prefill", "--async-scheduling", "--no-enable-prefix-caching",
        "--compilation-config",
        '{"pass_config": {"enable_fi_allreduce_fusion": true}, "custom_ops": ["+rms_norm"], "level": 3}',
    ]
    assert manifest["commands"] == [["docker", *runs[0]]]
    assert "secret-token-value" not in (job_dir / "manifest.json").read_text()

    # teardown: exactly our container, before (stale) and after the job; nothing left
    rms = [c for c in fake_cluster.calls("docker") if c[0] == "rm"]
    assert rms == [["rm", "-f", name], ["rm", "-f", name]]
    assert not list((fake_cluster.state / "containers").iterdir())

    result = json.loads((job_dir / "conc-4.json").read_text())
    block = result["infermatrix"]
    assert result["completed"] == 8 and result["failed"] == 0 and block["simulated"] is False
    assert block["launcher"] == "docker" and block["status"] == "ok"
    # two fake GPUs at 300 W and 350 W: 650 W while the level ran
    assert abs(block["avg_power_w"] - 650) < 1
    assert block["energy_j"] > 0
    assert abs(block["joules_per_output_token"] - block["energy_j"] / result["total_output_tokens"]) < 1e-9
    rows = list(csv.DictReader((job_dir / "gpu-metrics.csv").open()))
    assert rows and {r["gpu"] for r in rows} == {"0", "1"} and float(rows[0]["power_w"]) == 300
    assert (job_dir / "server-both-0.log").exists()
