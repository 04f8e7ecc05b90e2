"""Eval records into and out of the history: collect them from run folders, keep them in the store.

They live in the same SQLite file as the performance records, in their own ``evals`` table
(created on first use, so a store written before the gate existed simply gains it). Rows are
keyed by (run, job, task, level): collecting the same artifacts twice changes nothing. The whole
eval document, lm-eval's results included, is kept compressed beside the parsed fields.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .record import EvalRecord, from_document

EVAL_GLOB = "eval-*.json"
_TABLE = """
CREATE TABLE IF NOT EXISTS evals (
    run_id TEXT NOT NULL, job_id TEXT NOT NULL, task TEXT NOT NULL, concurrency INTEGER NOT NULL,
    recipe TEXT NOT NULL, model TEXT NOT NULL, status TEXT NOT NULL, score REAL,
    finished_at TEXT, body TEXT NOT NULL, raw BLOB,
    PRIMARY KEY (run_id, job_id, task, concurrency)
);
CREATE INDEX IF NOT EXISTS evals_recipe ON evals (recipe, finished_at);
"""


@dataclass
class EvalCollect:
    records: list[EvalRecord] = field(default_factory=list)
    raw: dict[tuple[str, str, str, int], bytes] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)


def collect_evals(paths: Iterable[Path]) -> EvalCollect:
    """Every eval-*.json under ``paths``; unusable files are listed in ``problems``, never raised."""
    out = EvalCollect()
    seen: set[Path] = set()
    for root in map(Path, paths):
        files = sorted(root.rglob(EVAL_GLOB)) if root.is_dir() else [root]
        for path in files:
            if path.resolve() in seen or not path.is_file():
                continue
            seen.add(path.resolve())
            try:
                data = path.read_bytes()
                rec = from_document(json.loads(data.decode("utf-8")), str(path))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
                out.problems.append((str(path), f"eval: {str(exc).splitlines()[0] if str(exc) else exc!r}"))
                continue
            if rec.key in out.raw:
                out.problems.append((str(path), "eval: duplicate run/job/task/level"))
                continue
            out.records.append(rec)
            out.raw[rec.key] = data
    return out


def _connect(store: Path) -> sqlite3.Connection:
    con = sqlite3.connect(store)
    con.executescript(_TABLE)
    return con


def save_evals(store: Path, records: Sequence[EvalRecord],
               raw: dict[tuple[str, str, str, int], bytes] | None = None) -> int:
    """Upsert into ``store`` (an existing history store); returns rows written."""
    rows = [(*rec.key[:2], rec.task, rec.concurrency, rec.recipe, rec.model, rec.status, rec.score,
             rec.finished_at, rec.model_dump_json(),
             zlib.compress(raw[rec.key], 6) if raw and rec.key in raw else None) for rec in records]
    con = _connect(store)
    try:
        with con:
            con.executemany("INSERT OR REPLACE INTO evals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    finally:
        con.close()
    return len(rows)


def load_evals(store: Path, recipes: Iterable[str] | None = None) -> list[EvalRecord]:
    con = _connect(store)
    try:
        rows = con.execute("SELECT body FROM evals ORDER BY run_id, job_id, task, concurrency").fetchall()
    finally:
        con.close()
    wanted = set(recipes) if recipes is not None else None
    recs = [EvalRecord.model_validate_json(b) for (b,) in rows]
    return [r for r in recs if wanted is None or r.recipe in wanted]


def load_eval_raw(store: Path, key: tuple[str, str, str, int]) -> bytes | None:
    con = _connect(store)
    try:
        row = con.execute("SELECT raw FROM evals WHERE run_id = ? AND job_id = ? AND task = ? "
                          "AND concurrency = ?", key).fetchone()
    finally:
        con.close()
    return zlib.decompress(row[0]) if row and row[0] is not None else None


def evals_from(paths: Iterable[Path]) -> list[EvalRecord]:
    """Eval records from what report and compare accept: run folders and history stores
    (records .jsonl files hold none)."""
    from ..results.store import is_store  # the store's own test of an SQLite file

    out: list[EvalRecord] = []
    for path in map(Path, paths):
        if path.is_dir():
            out += collect_evals([path]).records
        elif is_store(path):
            out += load_evals(path)
        elif path.name.startswith("eval-") and path.suffix == ".json":
            out += collect_evals([path]).records
    return out
