"""Read what report and compare accept: run directories, history stores, records JSONL."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..errors import UsageError
from . import agentic as ag
from .collect import CollectSummary, collect
from .export import read_records_jsonl
from .failures import JobFailure
from .records import Key, Record, run_order
from .store import Store, is_store


@dataclass
class Loaded:
    records: list[Record] = field(default_factory=list)
    raw: dict[Key, bytes] = field(default_factory=dict)
    summary: CollectSummary | None = None  # of the run directories read, if any
    agentic: list[ag.AgenticRecord] = field(default_factory=list)  # capacity searches
    failures: list[JobFailure] = field(default_factory=list)  # jobs that broke


def check_exists(paths: Iterable[Path]) -> None:
    for path in paths:
        if not Path(path).exists():
            raise UsageError(f"{path}: no such file or directory")


def merge_summaries(a: CollectSummary | None, b: CollectSummary) -> CollectSummary:
    if a is None:
        return b
    out = CollectSummary(problems=a.problems + b.problems)
    for f in fields(CollectSummary):
        if f.name not in ("problems", "stored"):
            setattr(out, f.name, getattr(a, f.name) + getattr(b, f.name))
    return out


def load_one(path: Path, runs: Sequence[str] | None = None) -> Loaded:
    """Records (and raw JSON, agentic records) of one input; ``runs`` limits a store to those
    runs."""
    path = Path(path)
    if path.is_dir():
        result = collect([path])
        return Loaded(result.records, result.raw, result.summary, result.agentic,
                      result.failures)
    if is_store(path):
        with Store(path) as db:
            return Loaded(db.records(runs), db.raw_all(runs), agentic=ag.load(db, runs),
                          failures=db.failures(runs))
    if path.suffix == ".jsonl":
        return Loaded(read_records_jsonl(path))
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    raise UsageError(f"{path}: not a run directory, history store or records JSONL")


def load(paths: Iterable[Path]) -> Loaded:
    """Every input merged; a later input wins for the same level."""
    merged: dict[Key, Record] = {}
    searches: dict[tuple[str, str, str, str], ag.AgenticRecord] = {}
    broken: dict[tuple[str, str], JobFailure] = {}
    out = Loaded()
    for path in paths:
        one = load_one(path)
        for r in one.records:
            merged[r.key] = r
        for a in one.agentic:
            searches[a.key] = a
        for f in one.failures:
            broken[f.key] = f
        out.raw.update(one.raw)
        if one.summary is not None:
            out.summary = merge_summaries(out.summary, one.summary)
    out.records = sorted(merged.values(), key=lambda r: r.key)
    out.agentic = sorted(searches.values(), key=lambda a: a.key)
    out.failures = sorted(broken.values(), key=lambda f: f.key)
    return out


def select_runs(records: Sequence[Record], runs: Sequence[str] | None = None,
                last: int | None = None, known: Iterable[str] = ()) -> list[Record]:
    """The records of the named runs, or of the ``last`` N runs (run order). ``known``: other run
    ids that may be named (those of agentic capacity searches)."""
    order = run_order(records)
    keep, named = set(order), set(order) | set(known)
    if runs:
        unknown = [r for r in runs if r not in named]
        if unknown:
            raise UsageError(f"run {unknown[0]} is not in the inputs "
                             f"(latest: {', '.join(order[-5:]) or 'none'})")
        keep = set(runs)
    if last is not None:
        if last < 1:
            raise UsageError(f"--last must be at least 1, not {last}")
        keep &= set(order[-last:])
    return [r for r in records if r.run_id in keep]


def select_agentic(records: Sequence[ag.AgenticRecord], runs: Sequence[str] | None = None,
                   last: int | None = None) -> list[ag.AgenticRecord]:
    """The agentic records of the named runs, or of the ``last`` N capacity-search runs (run ids
    start with their UTC time, so they sort in time order)."""
    keep = {r.run_id for r in records}
    if runs:
        keep &= set(runs)
    if last is not None:
        keep &= set(sorted({r.run_id for r in records})[-last:]) if last > 0 else set()
    return [r for r in records if r.run_id in keep]
