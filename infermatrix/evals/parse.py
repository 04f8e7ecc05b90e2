"""Read lm-eval's results JSON into one score, or say exactly why it cannot be trusted.

Anything unexpected (no file, broken JSON, task or metric missing, a score outside [0, 1], no
sample count) raises :class:`EvalOutputError` with a one-line reason: an eval that cannot be
read is a failed eval, never a pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..jsonio import read_json_bounded


class EvalOutputError(ValueError):
    """lm-eval's output is missing or malformed; the message is the reason recorded."""


@dataclass(frozen=True)
class ParsedScore:
    task: str  # the lm-eval task name
    metric: str
    score: float
    stderr: float | None  # None when lm-eval reports "N/A" (e.g. a single sample)
    task_version: str | None
    n_samples: int  # samples actually scored ("effective")
    n_samples_total: int | None  # size of the task's test set ("original")
    num_fewshot: int | None
    lm_eval_version: str | None


def find_results_file(output_dir: Path) -> Path:
    """The newest ``results_*.json`` lm-eval wrote under ``output_dir`` (it adds a model folder)."""
    found = sorted(Path(output_dir).rglob("results*.json"), key=lambda p: (p.stat().st_mtime, p.name))
    if not found:
        raise EvalOutputError(f"lm-eval wrote no results file under {output_dir}")
    return found[-1]


def load_results(path: Path) -> dict[str, Any]:
    try:
        doc = read_json_bounded(path)
    except FileNotFoundError:
        raise EvalOutputError(f"{path}: no such results file") from None
    except (OSError, ValueError) as exc:
        raise EvalOutputError(f"{path}: unreadable results JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise EvalOutputError(f"{path}: results JSON is not an object")
    return doc


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def parse_results(doc: dict[str, Any], task: str, metric: str) -> ParsedScore:
    """The score of ``task`` on ``metric`` (``name,filter``, e.g. ``exact_match,strict-match``)."""
    results = doc.get("results")
    if not isinstance(results, dict):
        raise EvalOutputError("lm-eval results JSON has no 'results' object")
    entry = results.get(task)
    if not isinstance(entry, dict):
        raise EvalOutputError(f"task {task!r} missing from lm-eval results "
                              f"(has: {', '.join(sorted(results)) or 'nothing'})")
    if metric not in entry:
        metrics = sorted(k for k in entry if k != "alias" and "_stderr" not in k)
        raise EvalOutputError(f"metric {metric!r} missing for task {task!r} "
                              f"(has: {', '.join(metrics) or 'nothing'})")
    score = _number(entry[metric])
    if score is None or not 0.0 <= score <= 1.0:
        raise EvalOutputError(f"{task} {metric} is {entry[metric]!r}, not a score in [0, 1]")
    name, _, filt = metric.partition(",")
    stderr_key = f"{name}_stderr,{filt}" if filt else f"{name}_stderr"
    samples = (doc.get("n-samples") or {}).get(task)
    effective = _number(samples.get("effective")) if isinstance(samples, dict) else None
    if effective is None or effective < 1:
        raise EvalOutputError(f"no sample count for task {task!r} in lm-eval results")
    original = _number(samples.get("original")) if isinstance(samples, dict) else None
    shots = _number((doc.get("n-shot") or {}).get(task))
    return ParsedScore(
        task=task, metric=metric, score=score, stderr=_number(entry.get(stderr_key)),
        task_version=_text((doc.get("versions") or {}).get(task)),
        n_samples=int(effective), n_samples_total=int(original) if original is not None else None,
        num_fewshot=int(shots) if shots is not None else None,
        lm_eval_version=_text(doc.get("lm_eval_version")),
    )
