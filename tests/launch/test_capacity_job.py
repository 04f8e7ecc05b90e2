"""A capacity job (an agentic workload in a sweep) through the real-engine path, against the fake
`docker`: the job launches its server like any job, proves it serves, runs the capacity search
with drains between levels and GPU power sampled, tears down, and writes the capacity document
where collect finds it. The commands are asserted exactly."""

from __future__ import annotations

import hashlib
import json

from launch_helpers import FakeCluster

from infermatrix.cli import main
from infermatrix.results import agentic

RECIPE = "deepseek-v4-pro/h200-sglang-w4a16"  # an AA-AgentPerf recipe on a docker fleet
WORKLOAD = """
agentic-tiny:
  kind: agentic
  sessions:
    source: synthetic
    distributions: {sessions: 8, turns: 3, system_prompt_tokens: 64, user_tokens: 32,
                    output_tokens: 16, tool_delay_s: 0.05}
    duration_s: 2
    warmup_s: 0.5
  slo_tiers:
    - {name: EASY, min_output_speed: 1, max_ttft_s: 60}
"""
SWEEP = f"""
description: one capacity job
entries:
  - recipes: [{RECIPE}]
    workloads: [agentic-tiny]
    capacity: {{start: 1, max_concurrency: 2}}
"""


def test_capacity_job_launches_searches_and_tears_down(fake_cluster: FakeCluster, monkeypatch,  # noqa: ANN001
                                                       capsys) -> None:  # noqa: ANN001
    root = fake_cluster.root
    (root / "matrix" / "workloads.yaml").write_text(
        (root / "matrix" / "workloads.yaml").read_text() + WORKLOAD)
    (root / "matrix" / "sweeps" / "capt.yaml").write_text(SWEEP)
    recipe = root / "benchmarks" / f"{RECIPE}.yaml"  # the site's cache folder, as a fleet sets it
    recipe.write_text(recipe.read_text() + "params: {HF_CACHE: /data/hf-cache}\n")
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", RECIPE)
    assert main(["plan", "capt", "--root", str(root), "--format", "json"]) == 0
    plan = fake_cluster.out.parent / "plan.json"
    plan.write_text(capsys.readouterr().out)
    (job,) = json.loads(plan.read_text())
    assert job["measurement"]["kind"] == "capacity" and job["concurrency"] == []

    rc = main(["run", str(plan), "--root", str(root), "--output-dir", str(fake_cluster.out),
               "--run-id", "cap1", "--ready-timeout", "120"])
    job_dir, manifest = fake_cluster.manifest("cap1")
    assert rc == 0 and manifest["status"] == "ok", manifest
    assert manifest["launcher"] == "docker" and manifest["ready_s"] >= 0
    assert manifest["job"] == job  # the planner's job, as written

    name = f"imx-cap1-{hashlib.sha256(job['id'].encode()).hexdigest()[:8]}-both-0"
    runs = [c for c in fake_cluster.calls("docker") if c[0] == "run"]
    assert len(runs) == 1
    assert runs[0] == EXPECTED_RUN(name, job["id"], "30000")
    assert manifest["commands"] == [["docker", *runs[0]]]
    # teardown: exactly our container, before (stale) and after the job; nothing left
    assert [c for c in fake_cluster.calls("docker") if c[0] == "rm"] == [["rm", "-f", name]] * 2
    assert not list((fake_cluster.state / "containers").iterdir())

    doc = json.loads((job_dir / "capacity.json").read_text())
    assert doc["schema"] == "infermatrix-agentic-capacity"
    ident = doc["infermatrix"]
    assert (ident["simulated"], ident["launcher"], ident["run_id"], ident["job_id"]) == \
        (False, "docker", "cap1", job["id"])
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2]
    assert [lv["concurrency"] for lv in manifest["levels"]] == [1, 2]
    # drained before every level, the server's own requests completed
    assert all(lv["between"]["drain"] and lv["completed"] > 0 for lv in doc["levels"])
    (tier,) = doc["tiers"]
    assert tier["tier"]["name"] == "EASY" and tier["passing_concurrency"] == 2
    assert not tier["bounded"]  # max_concurrency reached still passing
    # two fake GPUs at 300 W and 350 W, sampled while the passing level ran
    assert abs(tier["avg_power_w"] - 650) < 1 and tier["agents_per_kw"] > 0
    assert manifest["capacity"]["tiers"] == {"EASY": {"agents": 2, "bounded": False}}
    # collect reads it as agentic records
    (rec,) = agentic.load_documents([fake_cluster.out / "cap1"])
    assert (rec.recipe, rec.tier, rec.passing_concurrency) == (RECIPE, "EASY", 2)


def EXPECTED_RUN(name: str, job_id: str, port: str) -> list[str]:  # noqa: N802
    """The recipe's published launch command in the fleet's container (the fleet's model cache
    and the recipe's HF_CACHE mount name the same folder here, so it is listed twice)."""
    cache = ["-v", "/data/hf-cache:/root/.cache/huggingface"]
    return [
        "run", "--name", name, "--gpus", "all", "--shm-size", "32g", "--network", "host",
        *cache, *cache, "--rm", "--label", "infermatrix.run=cap1", "--label",
        f"infermatrix.job={job_id}", "lmsysorg/sglang:deepseek-v4-hopper",
        "python3", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V4-Pro",
        "--tp", "8", "--context-length", "393216", "--mem-fraction-static", "0.88",
        "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "1",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "2",
        "--moe-runner-backend", "marlin", "--host", "0.0.0.0", "--port", port,
    ]
