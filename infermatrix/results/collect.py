"""Collect: walk result files, put each in exactly one bucket, keep the valid level results.

Bad files never raise: they are counted (corrupt, truncated, duplicate, foreign, invalid) with a
one-line reason each. Optionally the records, their raw JSON and the capacity results of any
agentic capacity documents are saved into a history store (eval records: evals/history.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonio import JsonNumberError, loads_bounded, read_bounded
from . import agentic, failures
from .records import ForeignResult, InvalidResult, Key, Record, normalise
from .store import SaveCounts, Store

MANIFEST_KINDS = frozenset({"job-manifest", "run-manifest", "frontiers", "eval-result"})
BUCKETS = ("records", "manifests", "corrupt", "truncated", "duplicate", "foreign", "invalid",
           "other", "missing")
PROBLEMS = ("corrupt", "truncated", "duplicate", "foreign", "invalid", "missing")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_NUMBER_TAIL = re.compile(r"^[-+.eE0-9]+$")  # a number cut short: "1." or "2e"


@dataclass
class CollectSummary:
    """How many files went into each bucket, and why each problem file was skipped."""

    files: int = 0
    records: int = 0
    failed_levels: int = 0
    failed_jobs: int = 0  # jobs that broke before or during their levels (failure records)
    manifests: int = 0
    corrupt: int = 0
    truncated: int = 0
    duplicate: int = 0
    foreign: int = 0
    invalid: int = 0
    other: int = 0
    missing: int = 0
    interrupted_jobs: int = 0  # a job manifest left running or interrupted (crash, signal)
    missing_jobs: int = 0  # a job run.json planned that has no manifest at all
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    stored: SaveCounts | None = None

    @property
    def skipped(self) -> int:
        """Files seen but not used, other than non-JSON files (``other``)."""
        return self.corrupt + self.truncated + self.duplicate + self.foreign + self.invalid

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in BUCKETS}

    def line(self) -> str:
        jobs = f", {self.failed_jobs} failed jobs" if self.failed_jobs else ""
        text = (f"{self.records} records ({self.failed_levels} failed levels{jobs}) from {self.files} "
                f"files: {self.manifests} manifests, {self.corrupt} corrupt, {self.truncated} "
                f"truncated, {self.duplicate} duplicate, {self.foreign} foreign, {self.invalid} "
                f"invalid, {self.other} other; {self.missing} missing")
        if self.interrupted_jobs or self.missing_jobs:
            text += f"; {self.interrupted_jobs} interrupted jobs, {self.missing_jobs} missing jobs"
        if self.stored is not None:
            s = self.stored
            text += f"; store: {s.added} added, {s.updated} updated, {s.unchanged} unchanged"
        return text


@dataclass
class CollectResult:
    records: list[Record] = field(default_factory=list)
    summary: CollectSummary = field(default_factory=CollectSummary)
    raw: dict[Key, bytes] = field(default_factory=dict)
    agentic: list[agentic.AgenticRecord] = field(default_factory=list)
    agentic_stored: SaveCounts | None = None  # what the store did with the capacity results
    failures: list[failures.JobFailure] = field(default_factory=list)  # jobs that broke
    failures_stored: SaveCounts | None = None


def walk(paths: Iterable[Path]) -> list[Path]:
    """Every file under ``paths`` once (even through overlapping paths), in name order."""
    seen: dict[Path, Path] = {}
    for root in map(Path, paths):
        if root.is_file():
            seen.setdefault(root.resolve(), root)
            continue
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            for name in names:
                path = Path(folder, name)
                if path.is_file():
                    seen.setdefault(path.resolve(), path)
    return sorted(seen.values(), key=str)


def _truncated(text: str, exc: json.JSONDecodeError) -> bool:
    """Does the JSON stop before it is complete (rather than break in the middle)?"""
    rest = text[exc.pos:].strip()
    return (exc.msg.startswith("Unterminated string") or not rest or bool(_NUMBER_TAIL.match(rest))
            or any(lit.startswith(rest) and lit != rest for lit in _LITERALS))


def read_json(data: bytes) -> tuple[str, Any]:
    """("json", document) or (bucket, reason) for a file that is not complete, valid JSON."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":  # cut inside a multi-byte character
            return "truncated", "JSON stops before its end (inside a UTF-8 character)"
        return "corrupt", f"not UTF-8 (byte {exc.start})"
    if not text.strip():
        return "truncated", "empty file"
    try:
        return "json", loads_bounded(text)
    except json.JSONDecodeError as exc:
        if _truncated(text, exc):
            return "truncated", f"JSON stops before its end ({exc.msg})"
        return "corrupt", f"broken JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    except JsonNumberError as exc:
        return "corrupt", str(exc)
    except RecursionError:
        return "corrupt", "JSON nested too deeply"


def _kind(doc: Any) -> str:
    if not isinstance(doc, dict):
        return "foreign"
    if doc.get("schema") == agentic.SCHEMA:
        return "capacity"
    if doc.get("kind") == failures.KIND:
        return "failure"
    block = doc.get("infermatrix")
    if isinstance(block, dict) and block.get("kind") == "level-result":
        return "level"
    return "manifest" if doc.get("kind") in MANIFEST_KINDS else "foreign"


class _Collector:
    def __init__(self) -> None:
        self.result = CollectResult()
        self.s = self.result.summary
        self.listed: list[tuple[Path, Path]] = []  # (level file a manifest lists, the manifest)
        self.first: dict[Key, str] = {}  # key -> the file kept for it
        self.planned: list[tuple[Path, str]] = []  # (run.json, job id it plans)

    def skip(self, bucket: str, path: Path, reason: str) -> None:
        setattr(self.s, bucket, getattr(self.s, bucket) + 1)
        self.s.problems.append((str(path), f"{bucket}: {reason}"))

    def add(self, path: Path) -> None:
        self.s.files += 1
        if path.suffix != ".json":
            self.s.other += 1
            return
        try:
            data = read_bounded(path)  # a FIFO or a device named *.json is skipped, not waited on
        except OSError as exc:
            self.skip("corrupt", path, f"unreadable ({exc.strerror})")
            return
        bucket, doc = read_json(data)
        if bucket != "json":
            self.skip(bucket, path, doc)
            return
        kind = _kind(doc)
        if kind == "foreign":
            self.skip("foreign", path, "not an infermatrix level result")
        elif kind == "capacity":
            self.s.manifests += 1
            try:
                self.result.agentic += agentic.records_from_document(doc)
            except ValueError as exc:
                self.s.problems.append((str(path), f"agentic: {exc}"))
        elif kind == "failure":
            self.failure(path, doc)
        elif kind == "manifest":
            self.s.manifests += 1
            self.job_states(path, doc)
            if doc.get("kind") == "job-manifest":
                levels = doc.get("levels") if isinstance(doc.get("levels"), list) else []
                self.listed += [(path.parent / lv["file"], path) for lv in levels
                                if isinstance(lv, dict) and isinstance(lv.get("file"), str)]
        else:
            self.level(path, data, doc)

    def job_states(self, path: Path, doc: dict[str, Any]) -> None:
        """A job cut short (its manifest still says running, or interrupted) is reported; so is
        a job a sweep's run.json planned that never started (see docs/results.md)."""
        if doc.get("kind") == "job-manifest" and (doc.get("state") in ("running", "interrupted")
                                                 or doc.get("status") == "running"):
            self.s.interrupted_jobs += 1
            self.s.problems.append((str(path), f"interrupted: job {doc.get('state') or 'running'} "
                                               "when collected; finish it with --resume RUN_ID"))
        elif doc.get("kind") == "run-manifest" and isinstance(doc.get("jobs"), list):
            self.planned += [(path, job["id"]) for job in doc["jobs"] if isinstance(job, dict)
                             and isinstance(job.get("id"), str) and job["id"].strip(".")
                             and "/" not in job["id"] and "\\" not in job["id"]]

    def failure(self, path: Path, doc: dict[str, Any]) -> None:
        try:
            self.result.failures.append(failures.parse(doc, source=str(path)))
        except ValueError as exc:  # pydantic's ValidationError is one
            self.skip("invalid", path, f"failure record: {str(exc).splitlines()[0]}")
            return
        self.s.manifests += 1
        self.s.failed_jobs += 1

    def level(self, path: Path, data: bytes, doc: dict[str, Any]) -> None:
        try:
            rec = normalise(doc, source=str(path))
        except ForeignResult as exc:
            self.skip("foreign", path, str(exc))
            return
        except InvalidResult as exc:
            self.skip("invalid", path, str(exc))
            return
        if rec.key in self.first:
            self.skip("duplicate", path, f"same run/job/concurrency as {self.first[rec.key]}")
            return
        self.first[rec.key] = str(path)
        self.result.records.append(rec)
        self.result.raw[rec.key] = data
        self.s.records += 1
        self.s.failed_levels += not rec.ok

    def finish(self) -> CollectResult:
        for level_file, manifest in self.listed:
            if not level_file.is_file():
                self.s.missing += 1
                self.s.problems.append((str(level_file), f"missing: listed in {manifest}"))
        for run_file, job_id in self.planned:
            if not (run_file.parent / "jobs" / job_id / "manifest.json").is_file():
                self.s.missing_jobs += 1
                self.s.problems.append((str(run_file), f"missing: job {job_id} never started"))
        self.result.records.sort(key=lambda r: r.key)
        self.result.failures.sort(key=lambda f: f.key)
        return self.result


def collect(paths: Iterable[Path], store: Path | None = None) -> CollectResult:
    """Records from every level result under ``paths``; saved into ``store`` when given."""
    collector = _Collector()
    for path in walk(paths):
        collector.add(path)
    result = collector.finish()
    if store is not None:
        with Store(store) as db:
            result.summary.stored = db.save(result.records, result.raw)
            result.agentic_stored = db.save_agentic(result.agentic)
            result.failures_stored = db.save_failures(
                result.failures, resolved={(r.run_id, r.job_id) for r in result.records})
    return result
