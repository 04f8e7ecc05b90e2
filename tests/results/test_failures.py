"""Failure records: the one-line reason taken from an error and its log tail, the stage read
from the manifest, collect's bucket and count, the store's table (and its migration from a v4
store), and compare's "now failing" for a job that broke."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from infermatrix.launch.failure import reason_of, record_failure, stage_of
from infermatrix.results.collect import collect
from infermatrix.results.compare import compare, markdown
from infermatrix.results.failures import JobFailure
from infermatrix.results.store import MIGRATIONS, Store

DOCKER = ("both-0 exited with code 125 before serving; log tail:\ndocker: Cannot connect to the "
          "Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n\n"
          "Run 'docker run --help' for more information")
PYTHON = ("both-0 exited with code 1 before serving; log tail:\nINFO loading weights\n"
          "Traceback (most recent call last):\n  File \"x.py\", line 3\n"
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\nINFO exiting")


def test_the_reason_is_the_headline_and_the_line_that_says_why() -> None:
    assert reason_of(DOCKER) == ("both-0 exited with code 125 before serving: docker: Cannot "
                                 "connect to the Docker daemon at unix:///var/run/docker.sock. "
                                 "Is the docker daemon running?")
    assert reason_of(PYTHON).endswith("torch.OutOfMemoryError: CUDA out of memory. Tried to "
                                      "allocate 2.00 GiB")
    assert reason_of("no 2xx from http://x/health within 600 s") == \
        "no 2xx from http://x/health within 600 s"
    assert reason_of("both-0 exited with code 1 before serving; log tail:\n") == \
        "both-0 exited with code 1 before serving"
    assert "\n" not in reason_of("ValueError: a\nb\nc") and len(reason_of("x" * 10_000)) <= 400


def _manifest(**more: object) -> dict:
    job = {"id": "r.w.h200-dgx-1", "recipe": "m/r", "model": "m", "hardware": "H200",
           "engine": "vllm", "workload": "w", "runner": "h200-dgx", "fingerprint": "f",
           "concurrency": [4, 16], "measurement": {"kind": "levels"}}
    return {"run_id": "20261127T010000Z-a", "job": job, "status": "failed", "error": DOCKER,
            "levels": [{"concurrency": 4, "status": "skipped"}], "launcher": "docker", **more}


def test_the_stage_follows_what_the_manifest_recorded(tmp_path: Path) -> None:
    assert stage_of(_manifest()) == "launch"
    assert stage_of(_manifest(server_logs=["server-both-0.log"])) == "readiness"
    assert stage_of(_manifest(server_logs=[], ready_s=3.0)) == "levels"
    assert stage_of(_manifest(levels=[{"concurrency": 4, "status": "ok"}])) == "levels"
    # a failure record is written for an error, removed when a retry of the job succeeds,
    # and never written for an interrupted job (--resume finishes it)
    assert record_failure(tmp_path, _manifest(), simulated=False) is not None
    assert (tmp_path / "failure.json").is_file()
    assert record_failure(tmp_path, _manifest(status="ok", error=None), simulated=False) is None
    assert not (tmp_path / "failure.json").exists()
    assert record_failure(tmp_path, _manifest(state="interrupted"), simulated=False) is None


def _failed_run(root: Path, run_id: str = "20261127T010000Z-a") -> Path:
    job_dir = root / run_id / "jobs" / "r.w.h200-dgx-1"
    job_dir.mkdir(parents=True)
    record_failure(job_dir, _manifest(run_id=run_id, server_logs=["s.log"],
                                      finished_at=f"2026-11-{run_id[6:8]}T01:30:00Z"),
                   simulated=True)
    (job_dir.parent / "broken").mkdir()
    (job_dir.parent / "broken" / "failure.json").write_text(json.dumps({"kind": "job-failure"}))
    return root / run_id


def test_collect_counts_failed_jobs_and_the_store_keeps_them(tmp_path: Path) -> None:
    run = _failed_run(tmp_path / "runs")
    store = tmp_path / "h.sqlite"
    result = collect([run], store=store)
    assert result.summary.failed_jobs == 1 and result.summary.invalid == 1  # the broken one
    assert "1 failed jobs" in result.summary.line()
    (f,) = result.failures
    assert (f.stage, f.simulated, f.runner) == ("readiness", True, "h200-dgx")
    assert result.failures_stored is not None and result.failures_stored.added == 1
    again = collect([run], store=store)
    assert again.failures_stored is not None and again.failures_stored.unchanged == 1
    with Store(store) as db:
        assert [x.reason for x in db.failures()] == [f.reason]
        assert db.runs() == ["20261127T010000Z-a"]  # a run whose every job failed is a run
    # a retry measured the job (--resume): its failure record is gone, and from the store too
    from imx_results_data import level

    job_dir = run / "jobs" / "r.w.h200-dgx-1"
    (job_dir / "failure.json").unlink()
    (job_dir / "conc-4.json").write_text(json.dumps(level(4, {
        "run_id": "20261127T010000Z-a", "job_id": "r.w.h200-dgx-1", "recipe": "m/r"})))
    collect([run], store=store)
    with Store(store) as db:
        assert db.failures() == [] and db.count() == 1


def test_a_v4_store_gains_the_failures_table(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    for script in MIGRATIONS[:4]:
        con.executescript(script)
    con.execute("PRAGMA user_version = 4")
    con.close()
    with Store(path) as db:
        assert db.failures() == [] and db.count("failures") == 0


def test_compare_says_now_failing_with_the_reason(tmp_path: Path) -> None:
    from imx_results_data import level  # the results tests' hand-written raw results

    base_dir = tmp_path / "base"
    for conc in (4, 16):
        path = base_dir / "jobs" / "r.w.h200-dgx-1" / f"conc-{conc}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(level(conc, {"run_id": "20261126T010000Z-b", "recipe": "m/r",
                                                "job_id": "r.w.h200-dgx-1", "workload": "w"})))
    base = collect([base_dir]).records
    new = collect([_failed_run(tmp_path / "runs")]).failures
    rows = compare(base, [], new_failures=new)
    assert [r.change for r in rows] == ["now failing", "now failing"]
    text = markdown(rows, base, [])
    assert "**2 now failing**" in text and "Cannot connect to the Docker daemon" in text
    assert text.count("Cannot connect") == 1  # one job, its reason once
    fixed = compare([], base, base_failures=new)
    assert {r.change for r in fixed} == {"fixed"}
    assert isinstance(new[0], JobFailure)


def test_a_report_lists_only_failures_no_later_run_measured_past(tmp_path: Path) -> None:
    from imx_results_data import level

    from infermatrix.results.failures import not_superseded

    failed = collect([_failed_run(tmp_path / "runs", "20261120T010000Z-a")]).failures
    later = collect([_failed_run(tmp_path / "later", "20261122T010000Z-c")]).failures

    def ok(run: str) -> list:
        path = tmp_path / run / "jobs" / "j" / "conc-4.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(level(4, {"run_id": run, "job_id": "j", "recipe": "m/r",
                                             "workload": "w", "started_at": f"2026-11-{run[6:8]}"
                                             "T01:00:00Z"})))
        return collect([tmp_path / run]).records

    measured = ok("20261121T010000Z-b")  # the night after the failure measured it fine
    assert not_superseded(failed, measured) == []
    assert not_superseded(later, measured) == later  # ... but it broke again the night after
    assert not_superseded(failed, []) == failed
