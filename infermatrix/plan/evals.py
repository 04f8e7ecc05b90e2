"""The eval plan of a job, settled by the planner from its sweep entry's ``eval:`` policy, so a
runner (a laptop, a GitHub matrix cell) needs no sweep file to know what to evaluate."""

from __future__ import annotations

from typing import Any

from ..catalog.loader import Catalog
from ..catalog.yamlsrc import CatalogError
from ..evals.config import ACCURACY_FILE, load_accuracy
from ..evals.plan import plan_levels, policy_of
from .measurement import EvalStep


def eval_steps(cat: Catalog, entry: Any | None, workload: str, model: str,
               job_concurrency: list[int]) -> list[EvalStep]:
    """The evaluations after the levels of one job (none without a policy or levels).
    Levels are picked from the entry's whole list, so a per-level job evaluates only when it
    holds a picked level."""
    policy = policy_of(entry)
    if policy is None or not job_concurrency:
        return []
    try:
        accuracy = load_accuracy(cat.root, cat.models)
        levels = plan_levels(policy, accuracy, workload, list(entry.concurrency), job_concurrency)
    except (CatalogError, KeyError) as exc:
        # The sweep wants evals that cannot be set up: a failed record, never a quiet skip.
        reason = (f"{ACCURACY_FILE}: {exc}" if isinstance(exc, CatalogError)
                  else f"unknown eval task {exc} (not in {ACCURACY_FILE})")
        return [EvalStep(after=max(job_concurrency), task="setup", error=reason)]
    return [EvalStep(after=conc, task=name, spec=task, threshold=accuracy.threshold(model, name))
            for conc, tasks in sorted(levels.items()) for name, task in tasks]
