"""A 10,000-job sweep through the same workflow files (issue 29): sweep.yml's plan step writes
the plan artifact and outputs of a few hundred bytes, the shard job fans out over the shard ids,
and job.yml's select step turns any shard into a matrix within GitHub's limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gha import evaluate, read_outputs
from imx_workflows import REPO, load

from infermatrix.plan.github import MATRIX_CAP, OUTPUT_CAP, RUN_OUTPUT_CAP, output_bytes

sys.path.insert(0, str(REPO / "scripts"))
from bench_plan import build  # noqa: E402  (the benchmark's synthetic 10,000-job catalog)

pytestmark = pytest.mark.slow  # ~10 s: the planner on 10,000 jobs, then three select steps


def _step(workflow: str, job: str, step_id: str) -> str:
    return next(s for s in load(workflow)["jobs"][job]["steps"] if s.get("id") == step_id)["run"]


def _bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-c", script], env=full, cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False)


def test_ten_thousand_jobs_plan_shard_and_select(tmp_path: Path) -> None:
    build(tmp_path, recipes=250, fleets=10)  # 250 recipes x 4 workloads x 10 fleets
    out, summary = tmp_path / "github_output", tmp_path / "summary.md"
    proc = _bash(_step("sweep.yml", "plan", "plan"), tmp_path, SWEEP="big", FILTER_MODEL="*",
                 FILTER_HARDWARE="*", FILTER_ENGINE="*", FILTER_WORKLOAD="*",
                 INCREMENTAL="false", MAX_AGE_DAYS="7", GITHUB_OUTPUT=str(out),
                 GITHUB_STEP_SUMMARY=str(summary))
    assert proc.returncode == 0, proc.stderr
    outputs = read_outputs(out)
    assert outputs["jobs_total"] == "10000"
    assert sum(output_bytes(v) for v in outputs.values()) < 1_000  # ids and counts only
    shards = json.loads(outputs["shards"])
    assert 40 <= len(shards) <= MATRIX_CAP  # sweep.yml's own matrix over the ids
    assert "… and 9500 more jobs" in summary.read_text()
    # the shard job's matrix and inputs, evaluated as GitHub would
    shard_job = load("sweep.yml")["jobs"]["shard"]
    ctx = {"needs": {"plan": {"outputs": outputs}}, "github": {"run_id": 1}, "inputs": {}}
    cells = evaluate(shard_job["strategy"]["matrix"], ctx)["shard"]
    assert cells == shards
    assert evaluate(shard_job["with"]["shard"], {**ctx, "matrix": {"shard": cells[-1]}}) \
        == cells[-1]
    ids = [c["id"] for i in shards
           for c in json.loads((tmp_path / "plan" / f"shard-{i}.json").read_text())]
    assert len(ids) == len(set(ids)) == 10_000
    total = 0
    for shard in (shards[0], shards[len(shards) // 2], shards[-1]):
        matrix = tmp_path / f"matrix-{shard}"
        proc = _bash(_step("job.yml", "select", "matrix"), tmp_path, SHARD=str(shard),
                     SIMULATE="false", GITHUB_OUTPUT=str(matrix))
        assert proc.returncode == 0, proc.stderr
        jobs = read_outputs(matrix)["jobs"]
        assert len(json.loads(jobs)) <= MATRIX_CAP and output_bytes(jobs) <= OUTPUT_CAP
        total += output_bytes(jobs)
    assert total / 3 * len(shards) < RUN_OUTPUT_CAP
