"""The job loop's contract beyond the happy path: slow starts are waited for, a level over the
error-rate threshold fails (and `stop` ends the job there), SIGTERM tears down and says so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from launch_helpers import leftovers

from infermatrix.catalog.loader import load_catalog
from infermatrix.launch.deploy import start_sim
from infermatrix.launch.executors import Served
from infermatrix.launch.loop import run_measurement
from infermatrix.plan.jobs import Job

RECIPE = "deepseek-r1-0528/h200-sglang-fp8"


def _job(conc: list[int]) -> Job:
    return Job(id="policy-job", sweep="adhoc", recipe=RECIPE, model="deepseek-r1-0528",
               hardware="H200", engine="sglang", precision="fp8", mode="aggregated",
               workload="smoke-1k-128", runner="h200-dgx", launcher="docker", concurrency=conc,
               gpus=8, nodes=1, fingerprint="0" * 16, timeout_minutes=10,
               measurement={"kind": "levels", "concurrency": conc}, evals=[])


def test_error_rate_fails_the_level_and_stop_skips_the_rest(catalog_copy: Path, tmp_path: Path) -> None:
    cat = load_catalog(catalog_copy)
    faults = ["--time-scale", "20", "--faults", "slow_start:seconds=1;error:status=503,rate=0.5"]
    served = Served(partial(start_sim, cat, RECIPE, extra_args=faults), "local")
    outcome = run_measurement(cat, _job([2, 4]), tmp_path, "p1", served, log=lambda _m: None,
                              on_level_failure="stop")
    manifest = json.loads((outcome.job_dir / "manifest.json").read_text())
    assert outcome.status == "failed"
    assert manifest["error"].startswith("c=2: error rate") and "--on-level-failure stop" in manifest["error"]
    assert manifest["ready_s"] >= 0.9  # the 503s of a slow start are not "up"
    assert [(lv["concurrency"], lv["status"]) for lv in manifest["levels"]] == [(2, "failed"), (4, "skipped")]
    assert json.loads((outcome.job_dir / "conc-2.json").read_text())["failed"] > 0
    assert leftovers(str(catalog_copy)) == []


def test_sigterm_tears_down_and_records_it(catalog_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = subprocess.Popen(
        [sys.executable, "-m", "infermatrix.cli", "run", "--root", str(catalog_copy), "--engine", "sim",
         "--output-dir", str(out), "--run-id", "sig", "--recipe", RECIPE, "--workload", "fixed-1k-1k",
         "--runner-label", "h200-dgx", "--concurrency", "1", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
    deadline = time.monotonic() + 60
    while not list(out.glob("sig/jobs/*/manifest.json")) or not _ready(out):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    (manifest_path,) = out.glob("sig/jobs/*/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "failed" and manifest["error"] == "interrupted: SIGTERM"
    assert {lv["status"] for lv in manifest["levels"]} <= {"skipped", "failed"}
    assert leftovers(str(catalog_copy)) == []


def _ready(out: Path) -> bool:
    (path,) = out.glob("sig/jobs/*/manifest.json")
    try:
        return "ready_s" in json.loads(path.read_text())
    except ValueError:
        return False


def test_run_takes_a_job_from_the_plan_json(catalog_copy: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """`infermatrix plan --format json` output is what `infermatrix run JOBS.json --job-id` runs."""
    from infermatrix.cli import main

    assert main(["plan", "smoke", "--root", str(catalog_copy), "--format", "json"]) == 0
    plan = tmp_path / "jobs.json"
    plan.write_text(capsys.readouterr().out)
    jobs = json.loads(plan.read_text())
    job = next(j for j in jobs if j["recipe"] == RECIPE)
    rc = main(["run", str(plan), "--job-id", job["id"], "--engine", "sim", "--root", str(catalog_copy),
               "--output-dir", str(tmp_path / "out"), "--run-id", "plan"])
    manifest = json.loads((tmp_path / "out" / "plan" / "jobs" / job["id"] / "manifest.json").read_text())
    assert rc == 0 and manifest["status"] == "ok"
    assert manifest["job"] == job and [lv["concurrency"] for lv in manifest["levels"]] == job["concurrency"]
