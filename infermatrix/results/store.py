"""The history store: one SQLite file holding every record kind, versioned and migrated.

Four tables of records, all owned here: ``records`` (throughput levels, with their raw JSON in
``raw``), ``agentic`` (capacity results, one per run × recipe × workload × runner × SLO tier),
``evals`` (accuracy evaluations, one per run × job × task × level, with the eval document)
and ``failures`` (jobs that broke before or during their levels, one per run × job).

``PRAGMA user_version`` is the schema version. ``MIGRATIONS[i]`` upgrades a file from version
``i`` to ``i + 1``, each in its own transaction; append a migration, never edit one. A file
newer than this code is refused. Saving is idempotent: identical rows are left alone.

Eval records are defined by ``evals`` (which must not import ``results``, nor the other way
round): the store saves any object with their fields and returns them parsed by the model the
caller names.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Protocol, TypeVar

from pydantic import BaseModel

from ..errors import UsageError
from ..jsonio import open_regular
from .agentic import AgenticRecord
from .failures import JobFailure
from .records import Key, Record, order_runs

SQLITE_MAGIC = b"SQLite format 3\x00"

MIGRATIONS: tuple[str, ...] = (
    # v1: records, with the columns queries use (the planner reads fingerprint/finished_at/status)
    """
    CREATE TABLE records (
        run_id TEXT NOT NULL, job_id TEXT NOT NULL, concurrency INTEGER NOT NULL,
        recipe TEXT NOT NULL, model TEXT NOT NULL, hardware TEXT NOT NULL, engine TEXT NOT NULL,
        precision TEXT, workload TEXT NOT NULL, runner TEXT, fingerprint TEXT, status TEXT NOT NULL,
        started_at TEXT, finished_at TEXT, output_tput_per_gpu REAL, interactivity REAL,
        collected_at TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (run_id, job_id, concurrency)
    );
    CREATE INDEX records_config ON records (recipe, workload, runner, concurrency);
    CREATE INDEX records_fingerprint ON records (fingerprint, finished_at);
    """,
    # v2: the raw result of each record, zlib-compressed
    """
    CREATE TABLE raw (
        run_id TEXT NOT NULL, job_id TEXT NOT NULL, concurrency INTEGER NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (run_id, job_id, concurrency)
    );
    """,
    # v3: agentic capacity records. IF NOT EXISTS: before v3, saving a capacity result created
    # this very table on first use, so an older store may have it already.
    """
    CREATE TABLE IF NOT EXISTS agentic (
        run_id TEXT NOT NULL, recipe TEXT NOT NULL, workload TEXT NOT NULL, tier TEXT NOT NULL,
        passing_concurrency INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (run_id, recipe, workload, tier)
    );
    """,
    # v4: eval records, the eval document (lm-eval's results included) compressed in ``raw``.
    # IF NOT EXISTS for the same reason: evals/history.py used to create it on first use.
    """
    CREATE TABLE IF NOT EXISTS evals (
        run_id TEXT NOT NULL, job_id TEXT NOT NULL, task TEXT NOT NULL,
        concurrency INTEGER NOT NULL, recipe TEXT NOT NULL, model TEXT NOT NULL,
        status TEXT NOT NULL, score REAL, finished_at TEXT, body TEXT NOT NULL, raw BLOB,
        PRIMARY KEY (run_id, job_id, task, concurrency)
    );
    CREATE INDEX IF NOT EXISTS evals_recipe ON evals (recipe, finished_at);
    """,
    # v5: failure records, one per run × job that broke before or during its levels.
    # IF NOT EXISTS: a store another branch migrated in a different order may have it already.
    """
    CREATE TABLE IF NOT EXISTS failures (
        run_id TEXT NOT NULL, job_id TEXT NOT NULL, recipe TEXT NOT NULL, workload TEXT NOT NULL,
        runner TEXT, stage TEXT NOT NULL, reason TEXT NOT NULL, failed_at TEXT,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, job_id)
    );
    """,
    # v6: agentic records keyed with their runner (two fleets searching one recipe in one run
    # no longer overwrite each other), with the job's fingerprint and finish time (incremental
    # planning reads them). Rows stored before keep their key with the runner their body names
    # (none: ''), so an existing store stays readable.
    """
    CREATE TABLE agentic_v6 (
        run_id TEXT NOT NULL, recipe TEXT NOT NULL, workload TEXT NOT NULL, runner TEXT NOT NULL,
        tier TEXT NOT NULL, passing_concurrency INTEGER NOT NULL, fingerprint TEXT,
        finished_at TEXT, body TEXT NOT NULL,
        PRIMARY KEY (run_id, recipe, workload, runner, tier)
    );
    INSERT INTO agentic_v6 SELECT run_id, recipe, workload,
        COALESCE(json_extract(body, '$.runner'), ''), tier, passing_concurrency,
        json_extract(body, '$.fingerprint'), json_extract(body, '$.finished_at'), body
        FROM agentic;
    DROP TABLE agentic;
    ALTER TABLE agentic_v6 RENAME TO agentic;
    CREATE INDEX agentic_fingerprint ON agentic (fingerprint, finished_at);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
# each record table's key columns (its primary key, and the order rows are read in)
_KEYS: dict[str, tuple[str, ...]] = {
    "records": ("run_id", "job_id", "concurrency"),
    "agentic": ("run_id", "recipe", "workload", "runner", "tier"),
    "evals": ("run_id", "job_id", "task", "concurrency"),
    "failures": ("run_id", "job_id"),
}
_COLUMNS = ("run_id", "job_id", "concurrency", "recipe", "model", "hardware", "engine", "precision",
            "workload", "runner", "fingerprint", "status", "started_at", "finished_at",
            "output_tput_per_gpu", "interactivity")


EvalKey = tuple[str, str, str, int]  # run, job, task, concurrency
M = TypeVar("M", bound=BaseModel)


class EvalRow(Protocol):
    """What the store reads of an eval record (evals.record.EvalRecord)."""

    run_id: str
    job_id: str
    task: str
    concurrency: int
    recipe: str
    model: str
    status: str
    score: float | None
    finished_at: str | None

    @property
    def key(self) -> EvalKey: ...

    def model_dump_json(self) -> str: ...


def is_store(path: Path) -> bool:
    """True when ``path`` is an SQLite file (an empty file is not)."""
    try:
        with open_regular(path) as fh:  # a FIFO is no store (and never waited on)
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _same_measurement(stored: str | None, body: str) -> bool:
    """The same record, apart from the file it was read from: the same artifacts collected
    from another folder (a downloaded copy) are unchanged, not updated."""
    if stored is None or stored == body:
        return stored == body
    try:
        old, new = json.loads(stored), json.loads(body)
    except ValueError:
        return False
    return {**old, "source": None} == {**new, "source": None}


@dataclass(frozen=True)
class SaveCounts:
    added: int = 0
    updated: int = 0
    unchanged: int = 0

    def text(self) -> str:
        return f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged"


class Store:
    """``with Store(path) as db:`` — created and migrated to the current schema on open."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise UsageError(f"{self.path}: a history store is a file, not a folder")
        if self.path.exists() and self.path.stat().st_size and not is_store(self.path):
            raise UsageError(f"{self.path}: not an SQLite history store")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.con = sqlite3.connect(self.path, isolation_level=None)
            self.migrate()
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"{self.path}: cannot open the history store: {exc}") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    @property
    def version(self) -> int:
        return int(self.con.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> None:
        current = self.version
        if current > SCHEMA_VERSION:
            raise UsageError(f"{self.path}: history store schema v{current} is newer than this "
                             f"infermatrix (v{SCHEMA_VERSION}): upgrade infermatrix")
        for version in range(current, SCHEMA_VERSION):
            self.con.execute("BEGIN IMMEDIATE")
            try:
                for statement in MIGRATIONS[version].split(";"):
                    if statement.strip():
                        self.con.execute(statement)
                self.con.execute(f"PRAGMA user_version = {version + 1}")
                self.con.execute("COMMIT")
            except BaseException:
                self.con.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------ writing

    def _existing(self, table: str, runs: Iterable[str], key: Sequence[str] = _KEYS["records"]
                  ) -> dict[tuple, bytes | str]:
        """Key → the stored ``body`` of ``table``'s rows of ``runs``."""
        out: dict[tuple, bytes | str] = {}
        query = f"SELECT {', '.join(key)}, body FROM {table} WHERE run_id = ?"
        for run in runs:
            for *k, value in self.con.execute(query, (run,)):
                out[tuple(k)] = value
        return out

    def _write(self, statement: str, rows: Sequence[tuple]) -> None:
        """``statement`` for every row, in one transaction."""
        self.con.execute("BEGIN IMMEDIATE")
        try:
            self.con.executemany(statement, rows)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def save(self, records: Sequence[Record], raw: Mapping[Key, bytes] | None = None) -> SaveCounts:
        """Insert or update ``records`` (and their raw JSON); identical rows are not rewritten."""
        runs = {r.run_id for r in records}
        bodies, blobs = self._existing("records", runs), self._existing("raw", runs)
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows, raw_rows = [], []
        added = updated = 0
        for r in records:
            body = r.model_dump_json()
            blob = zlib.compress(raw[r.key], 6) if raw and r.key in raw else None
            body_same = _same_measurement(bodies.get(r.key), body)
            raw_same = blob is None or blobs.get(r.key) == blob
            if body_same and raw_same:
                continue
            if r.key in bodies:
                updated += 1
            else:
                added += 1
            if not body_same:
                rows.append((*(getattr(r, c) for c in _COLUMNS), now, body))
            if not raw_same:
                raw_rows.append((*r.key, blob))
        self.con.execute("BEGIN IMMEDIATE")
        try:
            marks = ", ".join("?" * (len(_COLUMNS) + 2))
            self.con.executemany(f"INSERT OR REPLACE INTO records ({', '.join(_COLUMNS)}, "
                                 f"collected_at, body) VALUES ({marks})", rows)
            self.con.executemany("INSERT OR REPLACE INTO raw VALUES (?, ?, ?, ?)", raw_rows)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        return SaveCounts(added, updated, len(records) - added - updated)

    def _upsert(self, table: str, items: Sequence[tuple[tuple, str, tuple]]) -> SaveCounts:
        """Upsert ``(key, body, row)`` items into ``table`` (the stored body compared)."""
        stored = self._existing(table, {k[0] for k, _, _ in items}, _KEYS[table])
        changed = [(k, row) for k, body, row in items if stored.get(k) != body]
        added = sum(k not in stored for k, _ in changed)
        if changed:
            marks = ", ".join("?" * len(changed[0][1]))
            self._write(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", [r for _, r in changed])
        return SaveCounts(added, len(changed) - added, len(items) - len(changed))

    def save_agentic(self, records: Sequence[AgenticRecord]) -> SaveCounts:
        """Insert or update agentic capacity records (one per run × recipe × workload × runner ×
        tier)."""
        items = []
        for r in records:
            body = r.model_dump_json()
            items.append((r.key, body, (*r.key, r.passing_concurrency, r.fingerprint or None,
                                        r.finished_at, body)))
        return self._upsert("agentic", items)

    def save_failures(self, failures: Sequence[JobFailure],
                      resolved: Iterable[tuple[str, str]] = ()) -> SaveCounts:
        """Insert or update failure records (one per run × job); drop those of ``resolved``
        jobs (run, job): a retry (``--resume``) that measured them removed their record."""
        gone = [key for key in resolved if key not in {f.key for f in failures}]
        if gone:
            self._write("DELETE FROM failures WHERE run_id = ? AND job_id = ?", gone)
        items = []
        for f in failures:
            body = f.model_dump_json(exclude={"source"})
            items.append((f.key, body, (*f.key, f.recipe, f.workload, f.runner, f.stage,
                                        f.reason, f.failed_at, body)))
        return self._upsert("failures", items)

    def save_evals(self, records: Sequence[EvalRow],
                   raw: Mapping[EvalKey, bytes] | None = None) -> SaveCounts:
        """Insert or update eval records and, when given, their documents as read from disk."""
        items = []
        for r in records:
            body = r.model_dump_json()
            blob = zlib.compress(raw[r.key], 6) if raw and r.key in raw else None
            items.append((r.key, body, (*r.key, r.recipe, r.model, r.status, r.score,
                                        r.finished_at, body, blob)))
        return self._upsert("evals", items)

    # ------------------------------------------------------------ reading

    def count(self, table: str = "records") -> int:
        """Rows of ``table``: records (throughput levels), agentic or evals."""
        if table not in _KEYS:
            raise ValueError(f"no record table {table!r}")
        return int(self.con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def runs(self) -> list[str]:
        """Run ids, oldest first (earliest started_at, then id); a run whose every job
        failed is one too."""
        query = ("SELECT DISTINCT run_id, started_at FROM records "
                 "UNION SELECT run_id, failed_at FROM failures")
        return order_runs(self.con.execute(query))

    def _where(self, runs: Iterable[str] | None) -> tuple[str, list[str]]:
        if runs is None:
            return "", []
        wanted = list(dict.fromkeys(runs))
        return f" WHERE run_id IN ({', '.join('?' * len(wanted))})", wanted

    def _bodies(self, table: str, model: type[M], runs: Iterable[str] | None) -> list[M]:
        """The ``body`` of every row of ``table`` (or of ``runs``) as ``model``, in key order."""
        where, args = self._where(runs)
        query = f"SELECT body FROM {table}{where} ORDER BY {', '.join(_KEYS[table])}"
        return [model.model_validate_json(body) for (body,) in self.con.execute(query, args)]

    def records(self, runs: Iterable[str] | None = None) -> list[Record]:
        """Every record (or those of ``runs``), by run, job and concurrency."""
        return self._bodies("records", Record, runs)

    def raw(self, key: Key) -> bytes | None:
        row = self.con.execute("SELECT body FROM raw WHERE run_id = ? AND job_id = ? AND "
                               "concurrency = ?", key).fetchone()
        return zlib.decompress(row[0]) if row else None

    def agentic(self, runs: Iterable[str] | None = None) -> list[AgenticRecord]:
        """Every agentic capacity record (or those of ``runs``)."""
        return self._bodies("agentic", AgenticRecord, runs)

    def failures(self, runs: Iterable[str] | None = None) -> list[JobFailure]:
        """Every failure record (or those of ``runs``), by run and job."""
        return self._bodies("failures", JobFailure, runs)

    def evals(self, model: type[M], runs: Iterable[str] | None = None) -> list[M]:
        """Every eval record (or those of ``runs``), parsed as ``model`` (evals' EvalRecord)."""
        return self._bodies("evals", model, runs)

    def eval_raw(self, key: EvalKey) -> bytes | None:
        """The eval document as it was read from disk (None when it was not kept)."""
        row = self.con.execute("SELECT raw FROM evals WHERE run_id = ? AND job_id = ? AND "
                               "task = ? AND concurrency = ?", key).fetchone()
        return zlib.decompress(row[0]) if row and row[0] is not None else None

    def raw_all(self, runs: Iterable[str] | None = None) -> dict[Key, bytes]:
        where, args = self._where(runs)
        query = f"SELECT run_id, job_id, concurrency, body FROM raw{where}"
        return {(r, j, c): zlib.decompress(b) for r, j, c, b in self.con.execute(query, args)}
