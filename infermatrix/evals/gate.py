"""The accuracy gate: may a performance record be published, given the evaluations we hold?

An evaluation vouches for a record when it is of the same recipe, engine version and image, on
the same kind of engine (simulated or real), and finished within ``freshness_days`` of the
record's measurement. Of those, the latest run's
evaluations decide, and all of them must pass: status ok (a failed or unparsable eval never
passes) and a score at or above the model's threshold for the task (matrix/accuracy.yaml, read
now, so a tightened threshold applies to old scores too).

A record no evaluation vouches for is ``missing``; a record from the simulated engine with no
evaluation at all is ``exempt`` (its tokens are filler: there is no accuracy to measure, and a
laptop sweep must still draw its plots). Only ``passed`` and ``exempt`` records are published.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

from ..catalog.accuracy import AccuracyConfig
from .record import EvalRecord

State = Literal["passed", "failed", "missing", "exempt"]
PUBLISHED: tuple[State, ...] = ("passed", "exempt")
GATED_STATUS = "gated"  # the status a held-back record carries in reports (anything but "ok")
DEFAULT_FRESHNESS_DAYS = 14.0


class PerfRecord(Protocol):
    """What the gate reads of a results record (results.records.Record)."""

    recipe: str
    engine_version: str
    image: str
    simulated: bool
    started_at: str | None
    finished_at: str | None


@dataclass(frozen=True)
class Verdict:
    state: State
    reason: str
    evals: tuple[EvalRecord, ...] = ()

    @property
    def published(self) -> bool:
        return self.state in PUBLISHED


def _time(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)  # naive stamps are UTC here


def _identity(recipe: str, engine_version: str | None, image: str | None,
              simulated: bool) -> tuple[str, str, str, bool]:
    # a simulated engine's score says nothing about the real one (and the reverse)
    return (recipe, engine_version or "", image or "", simulated)


def eval_verdict(ev: EvalRecord, accuracy: AccuracyConfig | None) -> tuple[bool, str]:
    """(passes, one-line reason) for one evaluation under the current thresholds."""
    where = f"{ev.task} (run {ev.run_id}, after c={ev.concurrency})"
    if not ev.ok:
        return False, f"{where}: eval failed: {ev.error or 'no score'}"
    threshold = accuracy.threshold(ev.model, ev.task) if accuracy is not None else ev.threshold
    if threshold is not None and ev.score < threshold:  # type: ignore[operator]
        return False, f"{where}: score {ev.score:.3f} < threshold {threshold:g}"
    bound = f" ≥ {threshold:g}" if threshold is not None else " (no threshold)"
    return True, f"{where}: {ev.score:.3f}{bound}"


class Gate:
    """Index the evaluations once, then judge any number of records."""

    def __init__(self, evals: Iterable[EvalRecord], accuracy: AccuracyConfig | None) -> None:
        self.accuracy = accuracy
        self.window = timedelta(days=accuracy.freshness_days if accuracy else DEFAULT_FRESHNESS_DAYS)
        self.by_identity: dict[tuple[str, str, str, bool], list[tuple[datetime, EvalRecord]]] = {}
        self.sim_evaluated: set[str] = set()  # recipes evaluated on the simulated engine
        for ev in evals:
            if ev.simulated:
                self.sim_evaluated.add(ev.recipe)
            when = _time(ev.finished_at) or _time(ev.started_at)
            if when is not None:  # an eval without a time cannot prove it is fresh
                key = _identity(ev.recipe, ev.engine_version, ev.image, ev.simulated)
                self.by_identity.setdefault(key, []).append((when, ev))

    def verdict(self, rec: PerfRecord) -> Verdict:
        measured = _time(rec.started_at) or _time(rec.finished_at)
        key = _identity(rec.recipe, rec.engine_version, rec.image, rec.simulated)
        candidates = self.by_identity.get(key, [])
        fresh = [(t, ev) for t, ev in candidates
                 if measured is not None and abs(t - measured) <= self.window]
        if not fresh:
            if rec.simulated and rec.recipe not in self.sim_evaluated:
                return Verdict("exempt", "simulated engine, not evaluated")
            days = f"{self.window.total_seconds() / 86400:g}"
            return Verdict("missing", f"no evaluation of {rec.recipe} within {days} days of this run")
        latest_run = max(fresh, key=lambda te: (te[0], te[1].run_id))[1].run_id
        decisive = tuple(ev for _, ev in sorted(fresh, key=lambda te: (te[1].task, te[1].concurrency))
                         if ev.run_id == latest_run)
        judged = [eval_verdict(ev, self.accuracy) for ev in decisive]
        failures = [reason for ok, reason in judged if not ok]
        if failures:
            return Verdict("failed", "; ".join(failures), decisive)
        return Verdict("passed", "; ".join(reason for _, reason in judged), decisive)


R = TypeVar("R", bound=BaseModel)


def mark(records: Sequence[R], gate: Gate) -> list[R]:
    """Records for publishing: an ok record the gate holds back gets status ``gated`` and the
    reason as its error, so every frontier, plot and dashboard view (which draw ok levels only)
    leaves it out while the table can still show it and why."""
    out: list[R] = []
    for rec in records:
        if getattr(rec, "status", "ok") == "ok":
            verdict = gate.verdict(rec)  # type: ignore[arg-type]
            if not verdict.published:
                rec = rec.model_copy(update={"status": GATED_STATUS,
                                             "error": f"accuracy gate: {verdict.reason}"})
        out.append(rec)
    return out
