"""job.yml's run step, executed as a runner would for one planned matrix cell (simulated engine):
it writes what the upload globs pick up, and once collected the incremental planner skips it."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from imx_workflows import load

from infermatrix.catalog.loader import load_catalog
from infermatrix.plan.github import github_outputs
from infermatrix.plan.incremental import incremental_plan
from infermatrix.plan.jobs import plan_sweep

pytestmark = pytest.mark.slow  # several seconds: one simulated server, three levels


def test_job_yml_runs_a_planned_cell(repo_root: Path, tmp_path: Path) -> None:
    jobs = [j for j in plan_sweep(load_catalog(repo_root), "smoke") if "sglang" in j.recipe]
    cell = json.loads(github_outputs(jobs)["shard_0"])[0]
    doc = load("job.yml")
    steps = doc["jobs"]["run"]["steps"]
    run_step = next(s for s in steps if "infermatrix run" in s.get("run", ""))
    run_id = "gh-42"
    env = {**os.environ, "RECIPE": cell["recipe"], "WORKLOAD": cell["workload"],
           "RUNNER_LABEL": cell["runner"], "CONCURRENCY": cell["concurrency"],
           "RUN_ID": run_id, "HF_TOKEN": "",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    assert set(doc["jobs"]["run"]["env"]) | set(run_step["env"]) >= {
        "RECIPE", "WORKLOAD", "RUNNER_LABEL", "CONCURRENCY", "RUN_ID", "HF_TOKEN"}
    proc = subprocess.run(["bash", "-c", run_step["run"]], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]

    uploads = {s["with"]["name"]: s["with"]["path"] for s in steps
               if str(s.get("uses", "")).startswith("actions/upload-artifact@")}
    result_glob = uploads["result-${{ inputs.id }}"]
    results = glob.glob(result_glob, root_dir=tmp_path)
    assert sum(p.endswith(("/conc-1.json", "/conc-4.json", "/conc-16.json")) for p in results) == 3
    assert any(p.endswith("/manifest.json") for p in results)
    logs = [p for pattern in uploads["logs-${{ inputs.id }}"].split()
            for p in glob.glob(pattern, root_dir=tmp_path)]
    assert any(p.endswith(".log") for p in logs)
    # collect downloads the artifacts into results/ and reads results/$RUN_ID
    assert (tmp_path / "results" / run_id / "jobs").is_dir()

    collect = pytest.importorskip("infermatrix.results.collect")
    store = tmp_path / "site" / "history.sqlite"
    collect.collect([tmp_path / "results" / run_id], store=store)
    # the run recorded the planner's fingerprint: tomorrow's incremental plan skips this job
    picked = incremental_plan(jobs, store, max_age_days=7)
    assert [j.id for j, _ in picked.skipped] == [cell["id"]]
    assert picked.planned == [j for j in jobs if j.id != cell["id"]]


def _collect_steps() -> list[dict]:
    return [s for s in load("sweep.yml")["jobs"]["collect"]["steps"] if "run" in s]


def test_collect_job_steps_run_on_downloaded_results(repo_root: Path, tmp_path: Path) -> None:
    """The collect job's own scripts, run in order on a results tree shaped like the merged
    `result-*` artifacts: first publish (no history), then a night with a published history."""
    pytest.importorskip("infermatrix.commands.results")
    synthetic = pytest.importorskip("infermatrix.results.synthetic")
    run_id = "gh-7"
    for job in synthetic.matrix_jobs(1, levels=(1, 4)):
        synthetic.write_job(tmp_path / "results" / run_id, job)
    summary = tmp_path / "summary.md"
    env = {**os.environ, "RUN_ID": run_id, "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def night(history_fetched: bool) -> list[str]:
        ran = []
        for step in _collect_steps():
            argv = step["run"].split()
            if argv[0] == "curl":  # the fetch set-up step: emulated by the test
                assert step["id"] == "history" and step.get("continue-on-error") is True
                continue
            if argv[0] != "infermatrix":  # set-up (pip install): this checkout is installed
                continue
            if "steps.history.outcome == 'success'" in step.get("if", "") and not history_fetched:
                continue
            proc = subprocess.run(["bash", "-c", step["run"]], env=env, cwd=tmp_path,
                                  capture_output=True, text=True, timeout=300, check=False)
            assert proc.returncode == 0, f"{step['name']}: {proc.stdout}{proc.stderr}"
            ran.append(argv[1])
        return ran

    assert night(history_fetched=False) == ["collect", "report"]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "history.sqlite").is_file()
    assert "infermatrix results" in summary.read_text()
    # next night: yesterday's published store is both the baseline and the store to extend
    (tmp_path / "published").mkdir()
    shutil.copy(tmp_path / "site" / "history.sqlite", tmp_path / "published" / "history.sqlite")
    assert night(history_fetched=True) == ["collect", "report", "compare"]
