"""The history store: idempotent re-collect, migrations, refusing a newer file, raw JSON."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from imx_results_data import BLOCK, RUN, make_raw, messy_run

from infermatrix.errors import UsageError
from infermatrix.plan.incremental import load_history
from infermatrix.results import collect
from infermatrix.results.records import normalise
from infermatrix.results.store import MIGRATIONS, SCHEMA_VERSION, Store, is_store


def rows(store: Path) -> int:
    con = sqlite3.connect(store)
    try:
        return con.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    finally:
        con.close()


def test_recollecting_is_idempotent(tmp_path: Path) -> None:
    run = messy_run(tmp_path)
    store = tmp_path / "history.sqlite"
    first = collect([run], store=store).summary.stored
    assert (first.added, first.updated, first.unchanged) == (6, 0, 0)
    stamps = sqlite3.connect(store).execute("SELECT collected_at FROM records").fetchall()
    again = collect([run], store=store).summary.stored
    assert (again.added, again.updated, again.unchanged) == (0, 0, 6)
    assert rows(store) == 6
    assert sqlite3.connect(store).execute("SELECT collected_at FROM records").fetchall() == stamps
    # a changed level is updated in place, not added
    path = run / "jobs" / BLOCK["job_id"] / "conc-1.json"
    raw = json.loads(path.read_text())
    raw["output_throughput"] *= 2
    path.write_text(json.dumps(raw))
    third = collect([run], store=store).summary.stored
    assert (third.added, third.updated, third.unchanged) == (0, 1, 5)
    with Store(store) as db:
        assert db.count() == 6 and db.version == SCHEMA_VERSION == 6
        rec = next(r for r in db.records() if r.concurrency == 1 and r.job_id == BLOCK["job_id"])
        assert rec.output_throughput == raw["output_throughput"]
        assert json.loads(db.raw(rec.key) or b"{}") == raw  # the raw JSON as it is now


def test_store_reads_back_records_runs_and_raw(tmp_path: Path) -> None:
    store = tmp_path / "h.sqlite"
    old = normalise(make_raw({"run_id": "z-old", "started_at": "2026-01-01T00:00:00Z"}))
    new = normalise(make_raw({"run_id": "a-new", "started_at": "2026-02-01T00:00:00Z"}))
    with Store(store) as db:
        counts = db.save([old, new], {old.key: b'{"old": 1}'})
        assert (counts.added, counts.updated, counts.unchanged) == (2, 0, 0)
        assert db.runs() == ["z-old", "a-new"]  # by start time, not by name
        assert db.records(["a-new"]) == [new] and db.records([]) == []
        assert db.raw_all() == {old.key: b'{"old": 1}'} and db.raw(new.key) is None
        # the same record with raw JSON now: updated, not unchanged
        assert db.save([new], {new.key: b"{}"}).updated == 1
    assert is_store(store) and not is_store(tmp_path / "nothing") and not is_store(tmp_path)


def test_planner_reads_what_collect_writes(tmp_path: Path) -> None:
    store = tmp_path / "h.sqlite"
    collect([messy_run(tmp_path)], store=store)
    # the aggregated job finished every level; the disaggregated one has a failed level
    assert set(load_history(store)) == {BLOCK["fingerprint"]}


def _v1_store(path: Path) -> None:
    """A store as the first schema wrote it: records only, user_version 1."""
    con = sqlite3.connect(path)
    con.executescript(MIGRATIONS[0])
    rec = normalise(make_raw())
    con.execute("INSERT INTO records (run_id, job_id, concurrency, recipe, model, hardware, "
                "engine, workload, status, collected_at, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*rec.key, rec.recipe, rec.model, rec.hardware, rec.engine, rec.workload,
                 rec.status, "2026-11-22T00:00:00Z", rec.model_dump_json()))
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()


def test_migration_from_v1(tmp_path: Path) -> None:
    store = tmp_path / "v1.sqlite"
    _v1_store(store)
    with Store(store) as db:
        assert db.version == SCHEMA_VERSION
        assert [r.key for r in db.records()] == [(RUN, BLOCK["job_id"], 4)]
        assert db.raw_all() == {}  # the new table, empty
        db.save(db.records(), {(RUN, BLOCK["job_id"], 4): b"{}"})
        assert db.raw((RUN, BLOCK["job_id"], 4)) == b"{}"
    tables = {name for (name,) in sqlite3.connect(store).execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"records", "raw", "agentic", "evals"} <= tables


# The tables results/agentic.py and evals/history.py created on first use before the store owned
# them (schema v2 with these beside it): exactly as those modules wrote them.
_ADHOC_AGENTIC = """CREATE TABLE IF NOT EXISTS agentic (
    run_id TEXT NOT NULL, recipe TEXT NOT NULL, workload TEXT NOT NULL, tier TEXT NOT NULL,
    passing_concurrency INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run_id, recipe, workload, tier))"""
_ADHOC_EVALS = """CREATE TABLE IF NOT EXISTS evals (
    run_id TEXT NOT NULL, job_id TEXT NOT NULL, task TEXT NOT NULL, concurrency INTEGER NOT NULL,
    recipe TEXT NOT NULL, model TEXT NOT NULL, status TEXT NOT NULL, score REAL,
    finished_at TEXT, body TEXT NOT NULL, raw BLOB,
    PRIMARY KEY (run_id, job_id, task, concurrency))"""


def test_migration_from_v2_with_the_tables_agentic_and_evals_used_to_create(tmp_path: Path) -> None:
    from infermatrix.evals.record import EvalRecord
    from infermatrix.results.agentic import AgenticRecord

    store = tmp_path / "v2.sqlite"
    _v1_store(store)
    con = sqlite3.connect(store)
    con.executescript(MIGRATIONS[1])
    con.execute("PRAGMA user_version = 2")
    con.execute(_ADHOC_AGENTIC)
    con.execute(_ADHOC_EVALS)
    cap = AgenticRecord(run_id=RUN, recipe="a/x", tier="SLO20", passing_concurrency=8)
    ev = EvalRecord(run_id=RUN, job_id=BLOCK["job_id"], recipe="a/x", model="m", concurrency=4,
                    task="gsm8k", status="ok", score=0.9)
    con.execute("INSERT INTO agentic VALUES (?, ?, ?, ?, ?, ?)",
                (cap.run_id, cap.recipe, cap.workload, cap.tier, 8, cap.model_dump_json()))
    con.execute("INSERT INTO evals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*ev.key, "a/x", "m", "ok", 0.9, None, ev.model_dump_json(), None))
    con.commit()
    con.close()
    with Store(store) as db:
        assert db.version == SCHEMA_VERSION
        assert db.agentic() == [cap] and db.evals(EvalRecord) == [ev]
        assert [r.key for r in db.records()] == [(RUN, BLOCK["job_id"], 4)]
        again = db.save_agentic([cap, cap.model_copy(update={"tier": "SLO60"})])
        assert (again.added, again.updated, again.unchanged) == (1, 0, 1)
        assert db.save_evals([ev.model_copy(update={"score": 0.8})]).updated == 1
        assert (db.count("agentic"), db.count("evals")) == (2, 1)
        assert db.agentic(["other-run"]) == []


def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import infermatrix.results.store as store_mod

    store = tmp_path / "v1.sqlite"
    _v1_store(store)
    monkeypatch.setattr(store_mod, "MIGRATIONS", (MIGRATIONS[0], "CREATE TABLE raw (x); BOGUS SQL"))
    with pytest.raises(UsageError, match="cannot open the history store"):
        Store(store)
    con = sqlite3.connect(store)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    assert con.execute("SELECT name FROM sqlite_master WHERE name = 'raw'").fetchone() is None


def test_a_store_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "future.sqlite"
    Store(store).close()
    con = sqlite3.connect(store)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(UsageError, match="newer than this infermatrix"):
        Store(store)
    res = subprocess.run([sys.executable, "-m", "infermatrix.cli", "collect",
                          str(messy_run(tmp_path)), "--store", str(store)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and f"v{SCHEMA_VERSION + 1} is newer" in res.stderr


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "notes.sqlite"
    bad.write_text("hello")
    with pytest.raises(UsageError, match="not an SQLite history store"):
        Store(bad)
    assert bad.read_text() == "hello"
