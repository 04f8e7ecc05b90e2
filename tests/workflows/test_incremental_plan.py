"""Incremental planning: jobs whose fingerprint has a fresh successful result are skipped."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from imx_workflows import load

from infermatrix.catalog.loader import load_catalog
from infermatrix.cli import main
from infermatrix.errors import UsageError
from infermatrix.plan.incremental import incremental_plan, load_history, parse_time
from infermatrix.plan.jobs import Job, plan_sweep

NOW = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def nightly(repo_root_module: Path) -> list[Job]:
    jobs = plan_sweep(load_catalog(repo_root_module), "nightly")
    assert len(jobs) >= 6
    return jobs


@pytest.fixture(scope="module")
def repo_root_module() -> Path:
    return Path(__file__).resolve().parents[2]


def roles(jobs: list[Job]) -> dict[str, Job]:
    """Six distinct jobs of the real nightly plan, one per history situation."""
    multi = [j for j in jobs if len(j.concurrency) > 1]
    assert multi, "the nightly sweep has no job with several concurrency levels"
    others = [j for j in jobs if j.id != multi[0].id]
    assert len(others) >= 5
    return {"partial": multi[0], "fresh": others[0], "fresh_single": others[1],
            "stale": others[2], "failed": others[3], "rerun": others[4]}


def expected_fresh(jobs: list[Job]) -> set[str]:
    r = roles(jobs)
    return {r["fresh"].id, r["fresh_single"].id, r["rerun"].id}


def history_rows(jobs: list[Job], now: datetime) -> list[dict]:
    """Fresh: two complete runs a day ago (a record per level), and a job measured twice (30
    and 2 days ago). Not fresh: 10 days old, failed 3 hours ago, a run with
    one failed level. The other jobs never ran."""
    r = roles(jobs)
    rows = []

    def add(job: Job, run: str, age: timedelta, status: str = "ok",
            levels: list[int] | None = None) -> None:
        for conc in levels or job.concurrency:  # one record per level, as collect writes
            rows.append({"fingerprint": job.fingerprint, "run_id": run, "concurrency": conc,
                         "finished_at": iso(now - age), "status": status})

    add(r["fresh"], "r-1d", timedelta(days=1))
    add(r["fresh_single"], "r-1d", timedelta(days=1))
    add(r["stale"], "r-10d", timedelta(days=10))
    add(r["failed"], "r-3h", timedelta(hours=3), status="failed")
    add(r["rerun"], "r-30d", timedelta(days=30))
    add(r["rerun"], "r-2d", timedelta(days=2))
    part = r["partial"]
    add(part, "r-1d", timedelta(days=1), levels=part.concurrency[:-1])
    add(part, "r-1d", timedelta(days=1), status="failed", levels=part.concurrency[-1:])
    return rows


def write_sqlite(path: Path, rows: list[dict]) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE records (run_id TEXT, job_id TEXT, concurrency INTEGER,"
                " fingerprint TEXT, status TEXT, started_at TEXT, finished_at TEXT)")
    con.executemany("INSERT INTO records (run_id, concurrency, fingerprint, status, finished_at) "
                    "VALUES (:run_id, :concurrency, :fingerprint, :status, :finished_at)", rows)
    con.commit()
    con.close()
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    # raw results carry the fingerprint inside their `infermatrix` block: mix both shapes
    lines = [json.dumps(r if i % 2 else {"infermatrix": r, "max_concurrency": 4})
             for i, r in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_only_jobs_without_a_fresh_result_are_planned(kind: str, nightly: list[Job],
                                                      tmp_path: Path) -> None:
    rows = history_rows(nightly, NOW)
    writer = write_sqlite if kind == "sqlite" else write_jsonl
    history = writer(tmp_path / f"history.{kind}", rows)
    picked = incremental_plan(nightly, history, max_age_days=7, now=NOW)
    fresh = expected_fresh(nightly)
    assert [j.id for j in picked.planned] == [j.id for j in nightly if j.id not in fresh]
    assert {j.id for j, _ in picked.skipped} == fresh
    # a longer window reaches the stale one too; a zero window keeps everything
    assert len(incremental_plan(nightly, history, 14, now=NOW).planned) == len(nightly) - 4
    assert len(incremental_plan(nightly, history, 0, now=NOW).planned) == len(nightly)
    # forced: everything planned, the fresh ones still reported
    forced = incremental_plan(nightly, history, 7, now=NOW, force=True)
    assert forced.planned == nightly and forced.skipped == [] and len(forced.fresh) == 3


def test_missing_history_plans_everything(nightly: list[Job], tmp_path: Path) -> None:
    assert load_history(tmp_path / "nothing-published-yet.sqlite") == {}
    assert incremental_plan(nightly, tmp_path / "none.jsonl", 7, now=NOW).planned == nightly


def test_unreadable_histories_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    con = sqlite3.connect(bad)
    con.execute("CREATE TABLE other (x)")
    con.commit()
    con.close()
    with pytest.raises(UsageError, match="no 'records' table"):
        load_history(bad)
    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"fingerprint": "a", "finished_at": "2026-01-01T00:00:00Z"}\nnot json\n')
    with pytest.raises(UsageError, match=r"bad\.jsonl:2:"):
        load_history(lines)


def test_time_formats() -> None:
    assert parse_time("2026-11-22T06:00:00Z") == NOW
    assert parse_time("2026-11-22T07:00:00+01:00") == NOW
    assert parse_time("2026-11-22T06:00:00") == NOW  # naive means UTC
    assert parse_time(NOW.timestamp()) == NOW and parse_time(str(NOW.timestamp())) == NOW
    assert parse_time(None) is None and parse_time("yesterday") is None
    assert parse_time("") is None and parse_time("nan") is None and parse_time(1e30) is None


def test_plan_cli_incremental(nightly: list[Job], tmp_path: Path,
                              capsys: pytest.CaptureFixture) -> None:
    now = datetime.now(UTC)
    history = write_sqlite(tmp_path / "history.sqlite", history_rows(nightly, now))
    assert main(["plan", "nightly", "--format", "json", "--incremental", "--history",
                 str(history), "--max-age-days", "7"]) == 0
    out = capsys.readouterr()
    planned = [j["id"] for j in json.loads(out.out)]
    assert set(planned) == {j.id for j in nightly} - expected_fresh(nightly)
    assert "3 of" in out.err
    assert main(["plan", "nightly", "--format", "json", "--incremental", "true", "--history",
                 str(history), "--force"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(nightly)
    assert main(["plan", "nightly", "--format", "json", "--incremental", "false", "--history",
                 str(history)]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(nightly)
    assert main(["plan", "nightly", "--incremental"]) == 2  # no --history: one line, exit 2
    assert "--history" in capsys.readouterr().err


def test_nightly_workflow_plans_incrementally(nightly: list[Job], tmp_path: Path) -> None:
    """sweep.yml's plan step, run as on a schedule, against a published history."""
    doc = load("sweep.yml")
    step = next(s for s in doc["jobs"]["plan"]["steps"] if s.get("id") == "plan")
    assert "published/history.sqlite" in step["run"]
    (tmp_path / "published").mkdir()
    write_sqlite(tmp_path / "published" / "history.sqlite", history_rows(nightly, datetime.now(UTC)))
    out = tmp_path / "github_output"
    env = {**os.environ, "SWEEP": "nightly", "FILTER_MODEL": "*", "FILTER_HARDWARE": "*",
           "FILTER_ENGINE": "*", "FILTER_WORKLOAD": "*", "INCREMENTAL": "true",
           "MAX_AGE_DAYS": "7", "GITHUB_OUTPUT": str(out),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["bash", "-c", step["run"]], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    values = {k: v for k, _, v in re.findall(r"^(\w+)<<(EOF_\w+)\n(.*?)\n\2$", out.read_text(),
                                              re.S | re.M)}
    assert int(values["jobs_total"]) == len(nightly) - 3
    ids = [c["id"] for f in (tmp_path / "plan").glob("shard-*.json") for c in json.loads(f.read_text())]
    assert sorted(ids) == sorted({j.id for j in nightly} - expected_fresh(nightly))


def test_reads_the_results_store(tmp_path: Path) -> None:
    """The planner reads what `infermatrix collect` writes (infermatrix/results/store.py)."""
    collect = pytest.importorskip("infermatrix.results.collect")
    synthetic = pytest.importorskip("imx_support.synthetic")
    run = tmp_path / "results" / "run-1"
    complete = synthetic.SynthJob()
    partial = synthetic.SynthJob(hardware="B200")
    synthetic.write_job(run, complete)
    synthetic.write_job(run, partial, failed_levels=(partial.concurrency[-1],))
    store = tmp_path / "history.sqlite"
    collect.collect([run], store=store)
    fingerprint = synthetic.level_result(complete, "run-1", 4)["infermatrix"]["fingerprint"]
    finished = synthetic.level_result(complete, "run-1", 4)["infermatrix"]["finished_at"]
    assert load_history(store) == {fingerprint: parse_time(finished)}
