"""The gate where results are published: report and collect call these, nothing more.

``apply_gate`` marks the records the gate holds back (status ``gated``) and returns a markdown
section saying which recipes were held back and why, with every evaluation's score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from ..catalog.accuracy import AccuracyConfig
from ..catalog.loader import default_root
from ..catalog.yamlsrc import CatalogError
from ..errors import UsageError
from .config import ACCURACY_FILE, load_accuracy
from .gate import GATED_STATUS, Gate, eval_verdict, mark
from .record import EvalRecord

R = TypeVar("R", bound=BaseModel)


def current_accuracy(root: Path | None = None) -> AccuracyConfig | None:
    """accuracy.yaml of ``root`` (default: the catalog root); None when there is none.

    Without it, evaluations keep the threshold they were run with; a malformed file is a
    mistake to fix (UsageError), never a reason to publish unchecked.
    """
    root = Path(root) if root is not None else default_root()
    if not (root / ACCURACY_FILE).is_file():
        return None
    try:
        return load_accuracy(root)
    except CatalogError as exc:
        raise UsageError(str(exc)) from None


def _fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def evals_markdown(evals: Sequence[EvalRecord], accuracy: AccuracyConfig | None) -> list[str]:
    if not evals:
        return []
    lines = ["| recipe | task | score | ± stderr | threshold | samples | after conc | verdict | run |",
             "|---|---|---|---|---|---|---|---|---|"]
    for ev in sorted(evals, key=lambda e: (e.recipe, e.task, e.run_id, e.concurrency)):
        ok, reason = eval_verdict(ev, accuracy)
        threshold = accuracy.threshold(ev.model, ev.task) if accuracy is not None else ev.threshold
        verdict = "pass" if ok else ("FAIL" if ev.ok else f"FAILED: {ev.error or '?'}")
        lines.append(f"| {ev.recipe} | {ev.task} | {_fmt(ev.score)} | {_fmt(ev.stderr)} | "
                     f"{'–' if threshold is None else f'{threshold:g}'} | {ev.n_samples or '–'} | "
                     f"{ev.concurrency} | {verdict.replace('|', '/')} | {ev.run_id} |")
    return lines


def apply_gate(records: Sequence[R], evals: Sequence[EvalRecord],
               accuracy: AccuracyConfig | None) -> tuple[list[R], str]:
    """(records with the held-back ones marked ``gated``, the accuracy section in markdown:
    empty when there was nothing to say)."""
    gate = Gate(evals, accuracy)
    marked = mark(records, gate)
    held: dict[str, str] = {}
    for before, after in zip(records, marked, strict=True):
        if getattr(after, "status", None) == GATED_STATUS and getattr(before, "status", None) == "ok":
            held.setdefault(after.recipe, after.error.removeprefix("accuracy gate: "))  # type: ignore[attr-defined]
    if not evals and not held:
        return marked, ""  # nothing evaluated, nothing held back (a laptop sweep on the sim)
    counts = Counter(getattr(r, "status", "") for r in marked)
    lines = ["### Accuracy gate", ""]
    if held:
        lines.append(f"{counts[GATED_STATUS]} levels of {len(held)} recipes held back "
                     "(no passing evaluation within the freshness window):")
        lines += [""] + [f"- `{recipe}`: {reason}" for recipe, reason in sorted(held.items())]
    else:
        lines.append("No level held back.")
    table = evals_markdown(evals, accuracy)
    if table:
        lines += ["", *table]
    return marked, "\n".join(lines) + "\n"


def run_gate(paths: Sequence[Path], root: Path | None = None
             ) -> Callable[[Sequence[R]], tuple[list[R], str]] | None:
    """For a run's own report (`infermatrix sweep`): the gate over the evals under ``paths``,
    or None when the run holds none (a sweep without an eval policy reports as measured)."""
    from .history import collect_evals

    evals = collect_evals(paths).records
    if not evals:
        return None
    accuracy = current_accuracy(root)
    return lambda records: apply_gate(records, evals, accuracy)


def collect_note(paths: Sequence[Path], records: Sequence[R],
                 evals: Sequence[EvalRecord] | None = None) -> tuple[list[R], str]:
    """For `collect`: (records marked by the gate, for its exports; a one-line note, or "").
    ``evals``: the eval records under ``paths`` when the caller has read them already."""
    from .history import collect_evals

    if evals is None:
        evals = collect_evals(paths).records
    marked, _ = apply_gate(records, evals, current_accuracy())
    held = [r for r in marked if getattr(r, "status", None) == GATED_STATUS]
    if not evals and not held:
        return marked, ""
    failed = sum(not e.ok for e in evals)
    recipes = len({getattr(r, "recipe", "") for r in held})
    return marked, (f"accuracy gate: {len(evals)} evals ({failed} failed to run), "
                    f"{len(held)} levels of {recipes} recipes held back")
