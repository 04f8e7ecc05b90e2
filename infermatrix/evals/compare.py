"""Accuracy beside performance in ``compare``: per recipe and task, the score then and now.

Each side's score is its latest run's lowest (the level that did worst decides, as in the gate).
A change counts when the two scores differ by more than twice their combined standard error, so
sampling noise on a few hundred questions is not reported as a regression.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..catalog.accuracy import AccuracyConfig
from ..markup import md_text
from .gate import eval_verdict
from .record import EvalRecord

MIN_SIGNIFICANT = 0.01  # when neither side has a stderr: one point of accuracy


@dataclass(frozen=True)
class AccuracyRow:
    recipe: str
    task: str
    base: EvalRecord | None
    new: EvalRecord | None
    delta: float | None
    change: str  # new | gone | now failing | fixed | lower | higher | same | failing


def _decisive(evals: Sequence[EvalRecord]) -> dict[tuple[str, str], EvalRecord]:
    """Per (recipe, task): the lowest-scoring eval of the latest run (a failed eval is lowest)."""
    latest: dict[tuple[str, str], str] = {}
    for ev in evals:
        key = (ev.recipe, ev.task)
        stamp = f"{ev.finished_at or ''}|{ev.run_id}"
        if key not in latest or stamp > latest[key]:
            latest[key] = stamp
    out: dict[tuple[str, str], EvalRecord] = {}
    for ev in evals:
        key = (ev.recipe, ev.task)
        if latest[key].split("|", 1)[1] != ev.run_id:
            continue
        old = out.get(key)
        rank = ev.score if ev.ok else -1.0
        if old is None or rank < (old.score if old.ok else -1.0):  # type: ignore[operator]
            out[key] = ev
    return out


def _significant(a: EvalRecord, b: EvalRecord) -> bool:
    errors = [e for e in (a.stderr, b.stderr) if e is not None]
    bound = 2 * math.sqrt(sum(e * e for e in errors)) if errors else MIN_SIGNIFICANT
    return abs(b.score - a.score) > max(bound, 1e-9)  # type: ignore[operator]


def compare_accuracy(base: Sequence[EvalRecord], new: Sequence[EvalRecord],
                     accuracy: AccuracyConfig | None) -> list[AccuracyRow]:
    a, b = _decisive(base), _decisive(new)
    rows = []
    for key in sorted(a.keys() | b.keys()):
        ea, eb = a.get(key), b.get(key)
        delta = eb.score - ea.score if ea and eb and ea.ok and eb.ok else None  # type: ignore[operator]
        if ea is None or eb is None:
            change = "new" if ea is None else "gone"
        else:
            pa, pb = eval_verdict(ea, accuracy)[0], eval_verdict(eb, accuracy)[0]
            if pa != pb:
                change = "fixed" if pb else "now failing"
            elif not pb:
                change = "failing"
            elif _significant(ea, eb):
                change = "higher" if delta and delta > 0 else "lower"
            else:
                change = "same"
        rows.append(AccuracyRow(key[0], key[1], ea, eb, delta, change))
    return rows


def _score(ev: EvalRecord | None) -> str:
    if ev is None:
        return "–"
    if not ev.ok:
        return "failed"
    return f"{ev.score:.3f}" + (f" ± {ev.stderr:.3f}" if ev.stderr is not None else "")


def accuracy_markdown(rows: Sequence[AccuracyRow]) -> str:
    """The compare report's accuracy section (empty string when neither side has evals)."""
    if not rows:
        return ""
    lines = ["", "### Accuracy", "", "| recipe | task | base | new | Δ | change |", "|---|---|---|---|---|---|"]
    for r in rows:
        delta = f"{r.delta:+.3f}" if r.delta is not None else "–"
        lines.append(f"| {md_text(r.recipe)} | {md_text(r.task)} | {_score(r.base)} | {_score(r.new)} | {delta} | {r.change} |")
    return "\n".join(lines) + "\n"


def accuracy_regressions(rows: Sequence[AccuracyRow]) -> list[AccuracyRow]:
    """Rows that should fail a regression gate: passing before, failing now."""
    return [r for r in rows if r.change == "now failing"]


def accuracy_section(base: Sequence[EvalRecord], new: Sequence[EvalRecord],
                     accuracy: AccuracyConfig | None) -> tuple[str, int]:
    """For `compare`: (markdown section, accuracy regressions) between the evals of the runs
    each side compares."""
    rows = compare_accuracy(base, new, accuracy)
    return accuracy_markdown(rows), len(accuracy_regressions(rows))
