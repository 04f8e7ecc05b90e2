"""The history store: one SQLite file of records (and their raw JSON), versioned and migrated.

``PRAGMA user_version`` is the schema version. ``MIGRATIONS[i]`` upgrades a file from version
``i`` to ``i + 1``, each in its own transaction; append a migration, never edit one. A file
newer than this code is refused. Saving is idempotent: identical rows are left alone.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from ..errors import UsageError
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
)
SCHEMA_VERSION = len(MIGRATIONS)
_COLUMNS = ("run_id", "job_id", "concurrency", "recipe", "model", "hardware", "engine", "precision",
            "workload", "runner", "fingerprint", "status", "started_at", "finished_at",
            "output_tput_per_gpu", "interactivity")


def is_store(path: Path) -> bool:
    """True when ``path`` is an SQLite file (an empty file is not)."""
    try:
        with Path(path).open("rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


@dataclass(frozen=True)
class SaveCounts:
    added: int = 0
    updated: int = 0
    unchanged: int = 0


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

    def _existing(self, table: str, runs: Iterable[str]) -> dict[Key, bytes | str]:
        out: dict[Key, bytes | str] = {}
        for run in runs:
            query = f"SELECT run_id, job_id, concurrency, body FROM {table} WHERE run_id = ?"
            for run_id, job_id, conc, body in self.con.execute(query, (run,)):
                out[(run_id, job_id, conc)] = body
        return out

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
            body_same = bodies.get(r.key) == body
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

    # ------------------------------------------------------------ reading

    def count(self) -> int:
        return int(self.con.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def runs(self) -> list[str]:
        """Run ids, oldest first (earliest started_at, then id)."""
        query = "SELECT DISTINCT run_id, started_at FROM records"
        return order_runs(self.con.execute(query))

    def _where(self, runs: Iterable[str] | None) -> tuple[str, list[str]]:
        if runs is None:
            return "", []
        wanted = list(dict.fromkeys(runs))
        return f" WHERE run_id IN ({', '.join('?' * len(wanted))})", wanted

    def records(self, runs: Iterable[str] | None = None) -> list[Record]:
        """Every record (or those of ``runs``), by run, job and concurrency."""
        where, args = self._where(runs)
        query = f"SELECT body FROM records{where} ORDER BY run_id, job_id, concurrency"
        return [Record.model_validate_json(body) for (body,) in self.con.execute(query, args)]

    def raw(self, key: Key) -> bytes | None:
        row = self.con.execute("SELECT body FROM raw WHERE run_id = ? AND job_id = ? AND "
                               "concurrency = ?", key).fetchone()
        return zlib.decompress(row[0]) if row else None

    def raw_all(self, runs: Iterable[str] | None = None) -> dict[Key, bytes]:
        where, args = self._where(runs)
        query = f"SELECT run_id, job_id, concurrency, body FROM raw{where}"
        return {(r, j, c): zlib.decompress(b) for r, j, c, b in self.con.execute(query, args)}
