"""Which levels of a job evaluate, and what: the sweep entry's ``eval:`` policy, resolved.

Levels are picked from the sweep entry's whole concurrency list, not the job's: a recipe that
relaunches per level has one-level jobs, and only the ones holding the picked levels evaluate.
"""

from __future__ import annotations

from typing import Any

from ..catalog.accuracy import AccuracyConfig, EvalPolicy, EvalTask
from ..catalog.loader import Catalog
from ..catalog.validate import entry_recipes

LevelPlan = dict[int, list[tuple[str, EvalTask]]]


def entry_for(cat: Catalog, sweep: str, recipe: str, workload: str) -> Any | None:
    """The first entry of ``sweep`` that lists ``recipe`` (by id or glob) and ``workload``."""
    found = cat.sweeps.get(sweep)
    for entry in found.entries if found is not None else []:
        if workload in entry.workloads and recipe in entry_recipes(cat, entry):
            return entry
    return None


def policy_of(entry: Any | None) -> EvalPolicy | None:
    """The entry's policy (``eval:``); None when the entry has none or the schema has no field."""
    policy = getattr(entry, "eval", None)
    return policy if isinstance(policy, EvalPolicy) else None


def plan_levels(policy: EvalPolicy | None, accuracy: AccuracyConfig, workload: str,
                entry_concurrency: list[int], job_concurrency: list[int]) -> LevelPlan:
    """Level → tasks to run after it, for one job. Empty when the job does not evaluate."""
    if policy is None or not policy.enabled:
        return {}
    if policy.workloads is not None and workload not in policy.workloads:
        return {}
    tasks = accuracy.resolve(policy)
    mine = set(job_concurrency)
    return {c: tasks for c in policy.levels(entry_concurrency) if c in mine}


def plan_job(cat: Catalog, job: Any, accuracy: AccuracyConfig) -> LevelPlan:
    """The eval plan of a planned job (``plan.jobs.Job``) from its sweep's policy."""
    entry = entry_for(cat, job.sweep, job.recipe, job.workload)
    concurrency = list(entry.concurrency) if entry is not None else list(job.concurrency)
    return plan_levels(policy_of(entry), accuracy, job.workload, concurrency, list(job.concurrency))
