"""Which levels of a job evaluate, and what: the sweep entry's ``eval:`` policy, resolved. The
planner calls it (``plan/evals.py``) and writes the result into the job; runners never re-match
sweep entries.

Levels are picked from the sweep entry's whole concurrency list, not the job's: a recipe that
relaunches per level has one-level jobs, and only the ones holding the picked levels evaluate.
"""

from __future__ import annotations

from typing import Any

from ..catalog.accuracy import AccuracyConfig, EvalPolicy, EvalTask

EvalsByLevel = dict[int, list[tuple[str, EvalTask]]]


def policy_of(entry: Any | None) -> EvalPolicy | None:
    """The entry's policy (``eval:``); None when the entry has none or the schema has no field."""
    policy = getattr(entry, "eval", None)
    return policy if isinstance(policy, EvalPolicy) else None


def plan_levels(policy: EvalPolicy | None, accuracy: AccuracyConfig, workload: str,
                entry_concurrency: list[int], job_concurrency: list[int]) -> EvalsByLevel:
    """Level → tasks to run after it, for one job. Empty when the job does not evaluate."""
    if policy is None or not policy.enabled:
        return {}
    if policy.workloads is not None and workload not in policy.workloads:
        return {}
    tasks = accuracy.resolve(policy)
    mine = set(job_concurrency)
    return {c: tasks for c in policy.levels(entry_concurrency) if c in mine}
