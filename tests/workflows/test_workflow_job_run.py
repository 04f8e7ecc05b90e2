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
from infermatrix.plan.github import matrix_outputs
from infermatrix.plan.incremental import incremental_plan
from infermatrix.plan.jobs import plan_sweep

pytestmark = pytest.mark.slow  # several seconds: one simulated server, three levels


def _run_cell(cell: dict, cwd: Path, run_id: str, **extra_env: str) -> subprocess.CompletedProcess:
    """job.yml's run step for one matrix cell, as a fleet's runner executes it: the cell's job
    (the planned job, pretty-printed as toJSON(matrix.job) does) in $JOB, the step's script."""
    doc = load("job.yml")
    (run_step,) = [s for s in doc["jobs"]["run"]["steps"]
                   if "infermatrix run" in s.get("run", "") and s["if"] == "${{ !inputs.simulate }}"]
    assert doc["jobs"]["run"]["env"]["JOB"] == "${{ toJSON(matrix.job) }}"
    env = {**os.environ, "JOB": json.dumps(cell["job"], indent=2), "RUN_ID": run_id, "HF_TOKEN": "",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           **extra_env}
    return subprocess.run(["bash", "-c", run_step["run"]], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


def _cells(jobs: list) -> list[dict]:
    return json.loads(matrix_outputs(jobs)["jobs"])


def test_job_yml_runs_a_planned_cell(repo_root: Path, tmp_path: Path) -> None:
    jobs = [j for j in plan_sweep(load_catalog(repo_root), "smoke") if "sglang" in j.recipe]
    cell = _cells(jobs)[0]
    shutil.copytree(repo_root / "matrix", tmp_path / "matrix")  # the checkout's catalog
    for part in ("runners", "benchmarks"):
        shutil.copytree(repo_root / part, tmp_path / part)
    run_id = "gh-42"
    proc = _run_cell(cell, tmp_path, run_id)
    assert proc.returncode == 0, proc.stderr[-3000:]

    steps = load("job.yml")["jobs"]["run"]["steps"]
    uploads = {s["with"]["name"]: s["with"]["path"] for s in steps
               if str(s.get("uses", "")).startswith("actions/upload-artifact@")}
    result_glob = uploads["result-${{ matrix.job.id }}"]
    results = glob.glob(result_glob, root_dir=tmp_path)
    assert sum(p.endswith(("/conc-1.json", "/conc-4.json", "/conc-16.json")) for p in results) == 3
    manifests = [p for p in results if p.endswith("/manifest.json")]
    assert len(manifests) == 1
    # the job that ran is the planner's job, every field
    assert json.loads((tmp_path / manifests[0]).read_text())["job"] == cell["job"]
    logs = [p for pattern in uploads["logs-${{ matrix.job.id }}"].split()
            for p in glob.glob(pattern, root_dir=tmp_path)]
    assert any(p.endswith(".log") for p in logs)
    # collect downloads the artifacts into results/ and reads results/$RUN_ID
    assert (tmp_path / "results" / run_id / "jobs").is_dir()

    collect = pytest.importorskip("infermatrix.results.collect")
    store = tmp_path / "site" / "history.sqlite"
    collect.collect([tmp_path / "results" / run_id], store=store)
    # the run recorded the planner's fingerprint: tomorrow's incremental plan skips this job
    picked = incremental_plan(jobs, store, max_age_days=7)
    assert [j.id for j, _ in picked.skipped] == [cell["job"]["id"]]
    assert picked.planned == [j for j in jobs if j.id != cell["job"]["id"]]


def test_eval_policy_reaches_the_runner_through_the_workflow(catalog_copy: Path,
                                                             tmp_path: Path) -> None:
    """A sweep's `eval:` policy, planned as GitHub shards and run the way job.yml runs a cell,
    produces its eval record (before, GitHub rebuilt the job from flags and dropped the policy).
    No lm-eval here on purpose: the record says so (failed), which proves the eval was planned,
    reached the runner and ran after the picked level."""
    (catalog_copy / "matrix" / "sweeps" / "evalci.yaml").write_text("""\
description: one sim job that evaluates after its highest level
entries:
  - recipes: [deepseek-r1-0528/h200-sglang-fp8]
    workloads: [smoke-1k-128]
    concurrency: [1, 2]
    eval: {at: [max], tasks: [gsm8k]}
""")
    jobs = plan_sweep(load_catalog(catalog_copy), "evalci")
    (cell,) = _cells(jobs)
    assert [(e["after"], e["task"]) for e in cell["job"]["evals"]] == [(2, "gsm8k")]
    proc = _run_cell(cell, catalog_copy, "gh-9",
                     INFERMATRIX_EVAL_VENV=str(tmp_path / "no-eval-venv"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (job_dir,) = (catalog_copy / "results" / "gh-9" / "jobs").iterdir()
    manifest = json.loads((job_dir / "manifest.json").read_text())
    (entry,) = manifest["evals"]
    assert (entry["task"], entry["concurrency"], entry["status"]) == ("gsm8k", 2, "failed")
    assert "lm-eval not installed" in entry["error"]
    record = json.loads((job_dir / entry["file"]).read_text())
    assert json.dumps(record).count("gsm8k") >= 1
    assert (job_dir / "conc-1.json").is_file() and (job_dir / "conc-2.json").is_file()


def _collect_steps() -> list[dict]:
    return [s for s in load("collect.yml")["jobs"]["collect"]["steps"] if "run" in s]


def test_collect_job_steps_run_on_downloaded_results(repo_root: Path, tmp_path: Path) -> None:
    """The collect job's own scripts, run in order on a results tree shaped like the merged
    `result-*` artifacts: first publish (no history), then a night with a published history."""
    pytest.importorskip("infermatrix.commands.results")
    synthetic = pytest.importorskip("imx_support.synthetic")
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
