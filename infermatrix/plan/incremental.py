"""Incremental planning: skip jobs whose fingerprint already has a fresh result in the history.

A fingerprint hashes everything that can change a job's numbers, so a job whose fingerprint
finished successfully less than ``max_age_days`` ago would measure the same thing again. The
nightly sweep plans with ``--incremental`` and spends its GPU time on what changed; ``--force``
(or ``--incremental false``) plans everything.

The history is read through one function, :func:`load_history`, which accepts either

- the results store (SQLite, infermatrix/results/store.py), read-only, asked about every kind
  of job: ``SELECT fingerprint, run_id, finished_at, status FROM records`` (throughput levels;
  ``run_id`` and ``status`` optional) and the ``agentic`` table's capacity searches (one row
  per tier, each a finished search), or
- a JSONL file of records, each with ``fingerprint`` and ``finished_at`` (or ``started_at``),
  and optionally ``run_id`` and ``status``, at the top level or inside an ``infermatrix``
  block as raw results carry them.

A fingerprint is fresh when one run measured it completely (every record of that run ``ok``)
less than ``max_age_days`` ago; a run with a failed level does not count.

A history that does not exist yet (the first nightly run, nothing published) is empty: every
job is planned.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..jsonio import loads_bounded, open_regular
from .jobs import Job

DEFAULT_MAX_AGE_DAYS = 7
# Record statuses that count as a result; anything else (failed, skipped, error) is re-run.
OK_STATUSES = frozenset({"ok", "success", "passed"})
SQLITE_MAGIC = b"SQLite format 3\x00"
MAX_LINE = 64 << 20  # one JSONL record


@dataclass(frozen=True)
class Selection:
    """Jobs to run, and the jobs with a fresh result (with its time): skipped unless forced."""

    planned: list[Job]
    fresh: list[tuple[Job, datetime]]
    forced: bool = False

    @property
    def skipped(self) -> list[tuple[Job, datetime]]:
        return [] if self.forced else self.fresh


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 (``Z`` or an offset; naive means UTC) or epoch seconds; None when unreadable."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    try:
        return datetime.fromtimestamp(float(text), UTC)
    except (ValueError, OverflowError, OSError):
        pass
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _ok(status: Any) -> bool:
    return status is None or str(status).lower() in OK_STATUSES


# One history row: (fingerprint, run id or None, finished time, status).
Row = tuple[Any, Any, Any, Any]


def _sqlite_rows(path: Path) -> Iterator[Row]:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise UsageError(f"{path}: cannot open the history store: {exc}") from None
    try:
        columns = {row[1] for row in con.execute("PRAGMA table_info(records)")}
        if not columns:
            raise UsageError(f"{path}: history store has no 'records' table")
        missing = {"fingerprint", "finished_at"} - columns
        if missing:
            raise UsageError(f"{path}: records table lacks column(s) {', '.join(sorted(missing))}")
        run = "run_id" if "run_id" in columns else "NULL"
        status = "status" if "status" in columns else "NULL"
        yield from con.execute(f"SELECT fingerprint, {run}, finished_at, {status} FROM records")
        capacity = {row[1] for row in con.execute("PRAGMA table_info(agentic)")}
        if {"fingerprint", "finished_at", "run_id"} <= capacity:  # a store of schema v6 or later
            yield from con.execute("SELECT fingerprint, run_id, finished_at, 'ok' FROM agentic")
    except sqlite3.Error as exc:
        raise UsageError(f"{path}: cannot read the history store: {exc}") from None
    finally:
        con.close()


def _jsonl_rows(path: Path) -> Iterator[Row]:
    with open_regular(path) as raw, io.TextIOWrapper(raw, encoding="utf-8") as fh:
        # a line at most MAX_LINE characters: one endless line is one clear error
        for lineno, line in enumerate(iter(lambda: fh.readline(MAX_LINE + 1), ""), 1):
            if len(line) > MAX_LINE:
                raise UsageError(f"{path}:{lineno}: a line longer than {MAX_LINE >> 20} MiB")
            if not line.strip():
                continue
            try:
                record = loads_bounded(line)
            except ValueError as exc:
                raise UsageError(f"{path}:{lineno}: not a JSON record: {exc}") from None
            if not isinstance(record, dict):
                raise UsageError(f"{path}:{lineno}: a record must be a JSON object")
            block = record.get("infermatrix")
            for source in (record, block if isinstance(block, dict) else {}):
                if source.get("fingerprint"):
                    yield (source["fingerprint"], source.get("run_id"),
                           source.get("finished_at") or source.get("started_at"),
                           source.get("status"))
                    break


def load_history(source: str | Path) -> dict[str, datetime]:
    """Fingerprint -> when its newest complete result finished, from a SQLite store or JSONL.

    A result is complete when every record of that fingerprint in that run (every concurrency
    level) succeeded: a run with a failed level does not make its fingerprint fresh.
    """
    path = Path(source)
    if not path.exists():
        return {}
    if path.is_dir():
        raise UsageError(f"{path}: a history is a SQLite store or a JSONL file, not a folder")
    try:  # a regular file: a FIFO or /dev/zero is refused, not read for ever
        with open_regular(path) as fh:
            is_sqlite = fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the history: {exc.strerror or exc}") from None
    rows: Iterable[Row] = _sqlite_rows(path) if is_sqlite else _jsonl_rows(path)
    runs: dict[tuple[str, Any], tuple[datetime | None, bool]] = {}
    for i, (fp, run_id, when, status) in enumerate(rows):
        if not fp:
            continue
        key = (str(fp), run_id if run_id is not None else f"row-{i}")
        last, ok = runs.get(key, (None, True))
        stamp = parse_time(when)
        if stamp is None:  # a record without a time cannot prove freshness
            runs[key] = (last, False)
            continue
        runs[key] = (stamp if last is None or stamp > last else last, ok and _ok(status))
    newest: dict[str, datetime] = {}
    for (fp, _), (stamp, ok) in runs.items():
        if ok and stamp is not None and (fp not in newest or stamp > newest[fp]):
            newest[fp] = stamp
    return newest


def select_jobs(jobs: list[Job], history: dict[str, datetime], max_age_days: float,
                now: datetime | None = None, force: bool = False) -> Selection:
    """Keep the jobs with no successful result newer than ``max_age_days``; all when forced."""
    if max_age_days < 0:
        raise UsageError(f"--max-age-days must be >= 0, not {max_age_days}")
    cutoff = (now or datetime.now(UTC)) - timedelta(days=max_age_days)
    planned: list[Job] = []
    fresh: list[tuple[Job, datetime]] = []
    for job in jobs:
        last = history.get(job.fingerprint)
        if last is not None and last > cutoff:
            fresh.append((job, last))
            if not force:
                continue
        planned.append(job)
    return Selection(planned=planned, fresh=fresh, forced=force)


def incremental_plan(jobs: list[Job], history: str | Path, max_age_days: float,
                     now: datetime | None = None, force: bool = False) -> Selection:
    """:func:`select_jobs` over the history read from ``history`` (a missing file is empty)."""
    return select_jobs(jobs, load_history(history), max_age_days, now=now, force=force)
