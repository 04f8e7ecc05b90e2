"""The whole gate for real: a sweep whose policy evaluates runs lm-eval (its own venv) with a local
task against the simulated engine; the eval record lands in the job folder and the history store,
and the filler-word score (0.0, under the threshold) keeps the recipe out of the published frontier.

Needs the eval venv (scripts/setup-lm-eval.sh): skipped without it, except under CI=true, where
a missing harness is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from imx_evals_data import LOCAL_TASK, write_local_task

from infermatrix.evals.harness import HarnessMissing, find_harness
from infermatrix.evals.record import EvalRecord
from infermatrix.results.store import Store

pytestmark = pytest.mark.slow
RECIPE = "deepseek-r1-0528/h200-sglang-fp8"


@pytest.fixture(scope="module")
def harness_available() -> None:
    try:
        find_harness()
    except HarnessMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must install the eval venv: {exc}")
        pytest.skip(str(exc))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infermatrix.cli", *args], capture_output=True,
                          text=True, timeout=600, check=False, cwd=cwd)


def test_sim_job_eval_is_stored_and_gates(harness_available: None, catalog_copy: Path,
                                           tmp_path: Path) -> None:
    tasks = write_local_task(tmp_path / "tasks", n=8)
    (catalog_copy / "matrix" / "accuracy.yaml").write_text(f"""\
tasks:
  local_qa:
    lm_eval_task: {LOCAL_TASK}
    metric: exact_match,none
    include_path: {json.dumps(str(tasks))}
    timeout_minutes: 5
default_tasks: [local_qa]
thresholds:
  default: {{local_qa: 0.5}}
""")
    (catalog_copy / "matrix" / "sweeps" / "evaltest.yaml").write_text(f"""\
description: one sim job that evaluates after its highest level
entries:
  - recipes: [{RECIPE}]
    workloads: [smoke-1k-128]
    concurrency: [1, 2]
    eval: {{at: [max], tasks: [{{task: local_qa, concurrency: 4}}]}}
""")
    # the stages CI runs: plan, run (one job), collect into the history store, report from it
    plan = _cli("plan", "evaltest", "--root", str(catalog_copy), "--format", "json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    (tmp_path / "jobs.json").write_text(plan.stdout)
    out = tmp_path / "results"
    proc = _cli("run", str(tmp_path / "jobs.json"), "--engine", "sim", "--root", str(catalog_copy),
                "--output-dir", str(out), "--run-id", "ev1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "eval local_qa after c=2: 0.000 [FAIL]" in proc.stderr

    # the eval record beside the level results, and in the job manifest
    (manifest_path,) = (out / "ev1" / "jobs").glob("*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "ok"  # a wrong answer is not a broken job: the gate handles it
    (entry,) = manifest["evals"]
    assert (entry["task"], entry["concurrency"], entry["status"], entry["score"]) == ("local_qa", 2, "ok", 0.0)
    doc = json.loads((manifest_path.parent / entry["file"]).read_text())
    assert doc["kind"] == "eval-result" and doc["recipe"] == RECIPE and doc["simulated"] is True
    assert doc["n_samples"] == 8 and doc["task_version"] == "1.0" and doc["eval_concurrency"] == 4
    assert doc["lm_eval"]["results"][LOCAL_TASK]["exact_match,none"] == 0.0

    # collect stores it with provenance; the published report leaves the recipe out
    store = tmp_path / "history.sqlite"
    proc = _cli("collect", str(out / "ev1"), "--store", str(store), cwd=catalog_copy)
    assert proc.returncode == 0, proc.stderr
    assert "accuracy gate: 1 evals (0 failed to run), 2 levels of 1 recipes held back" in proc.stdout
    with Store(store) as db:
        (stored,) = db.evals(EvalRecord)
        raw = db.eval_raw(stored.key)
    assert (stored.recipe, stored.task, stored.score, stored.threshold) == (RECIPE, "local_qa", 0.0, 0.5)
    assert stored.lm_eval_version == "0.4.13" and stored.fingerprint == manifest["job"]["fingerprint"]
    assert "--include_path" in stored.command and stored.finished_at
    assert json.loads(raw or b"{}")["lm_eval"]["n-samples"]
    site = tmp_path / "site"
    proc = _cli("report", str(store), "-o", str(site), "--no-plots", cwd=catalog_copy)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in (site / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2 and {r["status"] for r in records} == {"gated"}
    assert "local_qa (run ev1, after c=2): score 0.000 < threshold 0.5" in records[0]["error"]
    frontier = json.loads((site / "frontiers.json").read_text())
    points = [p for view in frontier["views"].values() for panel in view["panels"]
              for line in panel["frontiers"].values() for p in line]
    assert points == []
    summary = (site / "summary.md").read_text()
    assert "### Accuracy gate" in summary and f"`{RECIPE}`" in summary
    assert '"gated"' in (site / "index.html").read_text()  # the dashboard lists them, flagged
