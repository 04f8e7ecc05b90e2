"""Expand a sweep into jobs: one per (recipe, workload, runner label), each a complete work order.

A job says everything its runner needs besides the recipe: what to measure (``measurement``:
the concurrency levels of a fixed workload, or the capacity search of an agentic one, with its
tiers, sessions and bounds), which accuracy evaluations to run after which level (``evals``),
and the sweep it came from. ``make_job`` is the one constructor: the planner, ``run --recipe``
and the workflows all build jobs through it.

A job launches its server once and sweeps every concurrency level against it, unless a server flag
depends on the concurrency (InferenceMAX's ``--max-num-seqs $CONC``): then each level is its own
job, because the server must be relaunched anyway.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from ..catalog.loader import Catalog
from ..catalog.validate import entry_recipes, fleet_fits
from .measurement import (
    CapacityMeasurement,
    EvalStep,
    LevelsMeasurement,
    Measurement,
    capacity_measurement,
)

# Bump when the meaning of a fingerprint changes, so old results stop matching new jobs.
FINGERPRINT_VERSION = 1
# Rough per-token and per-start budgets for a job's time-out (generous: a time-out is a failure).
TIMEOUT_STARTUP_MIN = 30
TIMEOUT_SECONDS_PER_OUTPUT_TOKEN = 0.1
TIMEOUT_MAX_MIN = 24 * 60


class Job(BaseModel):
    """One unit of work for one runner. Every field is required: rows have no defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    sweep: str
    recipe: str
    model: str
    hardware: str
    engine: str
    precision: str
    mode: str
    workload: str
    runner: str
    launcher: str
    concurrency: list[int]
    gpus: int
    nodes: int
    fingerprint: str
    timeout_minutes: int
    measurement: Measurement
    evals: list[EvalStep]

    @model_validator(mode="after")
    def _one_list_of_levels(self) -> Job:
        """``concurrency`` is the levels measurement's list (kept for readers of plans), and a
        capacity job has none: a hand-edited job cannot say two things."""
        levels = getattr(self.measurement, "concurrency", [])
        if self.concurrency != levels:
            raise ValueError(f"concurrency {self.concurrency} differs from the measurement's "
                             f"{levels}")
        return self

    @property
    def capacity(self) -> CapacityMeasurement | None:
        m = self.measurement
        return m if isinstance(m, CapacityMeasurement) else None


def conc_params(job: Job | None, level: int | None = None) -> dict[str, str]:
    """The one binding of ``${CONC}``, for every executor. ``level``, when a deployment is made
    for it (a virtual level; a virtual capacity level, each on a fresh deployment); else the
    job's only level (a job per level, as the planner makes them for ``$CONC`` recipes); else,
    for a capacity search on one launched server, its bound ``max_concurrency``: no level is
    capped below its agents, as none is when each level binds its own number (a closed loop of
    N agents never has more than N requests in flight); unbound otherwise (several levels)."""
    if level is None and job is not None:
        if job.capacity is not None:
            level = job.capacity.max_concurrency
        elif len(job.concurrency) == 1:
            level = job.concurrency[0]
    return {} if level is None else {"CONC": str(level)}


@dataclass
class Filters:
    """Glob filters; an empty list lets everything through."""

    model: list[str] = field(default_factory=list)
    hardware: list[str] = field(default_factory=list)
    engine: list[str] = field(default_factory=list)
    workload: list[str] = field(default_factory=list)
    recipe: list[str] = field(default_factory=list)
    runner: list[str] = field(default_factory=list)

    def allows(self, **values: str) -> bool:
        for name, value in values.items():
            patterns: list[str] = getattr(self, name)
            if patterns and not any(matches(value, p) for p in patterns):
                return False
        return True


FILTER_NAMES = tuple(f.name for f in fields(Filters))


def matches(value: str, pattern: str) -> bool:
    """A filter's glob, case-insensitive: ``--hardware h200`` means H200."""
    return fnmatch.fnmatchcase(value.casefold(), pattern.casefold())


def _canonical(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)


def _digest(payload: Any, length: int = 16) -> str:
    return _sha(_canonical(payload), length)


def _sha(text: str, length: int = 16) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


_VERSION_JSON = _canonical(FINGERPRINT_VERSION)


class PlanMemo:
    """What a sweep's jobs share, computed once per plan instead of once per job (a 10,000-job
    sweep has a few hundred recipes): each catalog entry's canonical JSON in the fingerprint,
    and whether a recipe launches per level."""

    def __init__(self, cat: Catalog) -> None:
        self.cat = cat
        self._parts: dict[tuple[str, str], str] = {}
        self._split: dict[str, bool] = {}
        self._timeouts: dict[tuple[str, tuple[int, ...]], int] = {}

    def part(self, kind: str, name: str) -> str:
        key = (kind, name)
        if key not in self._parts:
            self._parts[key] = _canonical(self._dump(kind, name))
        return self._parts[key]

    def _dump(self, kind: str, name: str) -> Any:
        cat = self.cat
        if kind == "recipe":
            return cat.recipes[name].model_dump(mode="json", exclude={"source", "tags"})
        if kind == "model":
            return cat.models[name].model_dump(mode="json")
        if kind == "hardware":
            return cat.hardware[name].model_dump(mode="json", exclude={"usd_per_gpu_hour"})
        if kind == "workload":
            return cat.workloads[name].model_dump(mode="json", exclude={"description"})
        return cat.fleets[name].model_dump(mode="json", exclude={"hosts", "exclude_nodes"})

    def launch_per_concurrency(self, recipe_id: str) -> bool:
        if recipe_id not in self._split:
            self._split[recipe_id] = self.cat.recipes[recipe_id].launch_per_concurrency
        return self._split[recipe_id]

    def timeout_minutes(self, workload: str, concurrency: list[int]) -> int:
        key = (workload, tuple(concurrency))
        if key not in self._timeouts:
            self._timeouts[key] = _timeout_minutes(self.cat, workload, concurrency)
        return self._timeouts[key]


def fingerprint(cat: Catalog, recipe_id: str, workload: str, runner: str,
                concurrency: list[int], capacity: CapacityMeasurement | None = None,
                memo: PlanMemo | None = None) -> str:
    """Hash of everything that can change a job's numbers (not its source notes or tags).
    The canonical JSON of {v, recipe, model, hardware, workload, fleet, concurrency[, capacity]}
    with sorted keys, assembled from each entry's own canonical JSON (the same bytes)."""
    memo = memo or PlanMemo(cat)
    recipe = cat.recipes[recipe_id]
    parts = {
        "v": _VERSION_JSON,
        "recipe": memo.part("recipe", recipe_id),
        "model": memo.part("model", recipe.model),
        "hardware": memo.part("hardware", recipe.hardware),
        "workload": memo.part("workload", workload),
        "fleet": memo.part("fleet", runner),
        "concurrency": _canonical(concurrency),
    }
    if capacity is not None:  # only capacity jobs: a throughput job's fingerprint is unchanged
        parts["capacity"] = _canonical(capacity.model_dump(mode="json"))
    body = ",".join(f'"{key}":{parts[key]}' for key in sorted(parts))  # plain ASCII keys
    return _sha(f"{{{body}}}")


def _runner_labels(cat: Catalog, recipe_id: str, requested: list[str] | None) -> list[str]:
    recipe = cat.recipes[recipe_id]
    if requested is None:  # default: the first fleet (in fleets.yaml order) that can run it
        fitting = [lb for lb in cat.fleets if fleet_fits(cat, recipe, lb) is None]
        return fitting[:1]
    labels = list(cat.fleets) if "*" in requested else requested
    return [lb for lb in labels if fleet_fits(cat, recipe, lb) is None]


def _capacity_minutes(m: CapacityMeasurement) -> int:
    """Doubling to the bound, then bisecting to the resolution: every level a full window."""
    levels = 2 * max(1, math.ceil(math.log2(max(2, m.max_concurrency / m.start))))
    seconds = levels * (m.sessions.duration_s + m.sessions.warmup_s) * 1.5
    if m.time_budget_s is not None:
        seconds = min(seconds, m.time_budget_s + m.sessions.duration_s + m.sessions.warmup_s)
    return min(TIMEOUT_MAX_MIN, TIMEOUT_STARTUP_MIN + math.ceil(seconds / 60))


def _timeout_minutes(cat: Catalog, workload: str, concurrency: list[int]) -> int:
    wl = cat.workloads[workload]
    seconds = 0.0
    for conc in concurrency:
        waves = math.ceil((wl.num_prompts(conc) + wl.num_warmups(conc)) / conc)
        seconds += waves * wl.osl * TIMEOUT_SECONDS_PER_OUTPUT_TOKEN
    return min(TIMEOUT_MAX_MIN, TIMEOUT_STARTUP_MIN + math.ceil(seconds / 60))


def _nodes(cat: Catalog, recipe_id: str, runner: str) -> int:
    per_node = cat.fleets[runner].gpus_per_node
    return sum(p.instances * math.ceil(p.parallel.gpus / per_node)
               for p in cat.recipes[recipe_id].topology.pools)


def job_id(recipe_id: str, workload: str, runner: str, concurrency: list[int], split: bool) -> str:
    base = f"{recipe_id.replace('/', '.')}.{workload}.{runner}"
    if split:
        base += f".c{concurrency[0]}"
    return f"{base}-{_digest([recipe_id, workload, runner, concurrency], 8)}"


def make_job(cat: Catalog, sweep_name: str, recipe_id: str, workload: str, runner: str,
             concurrency: list[int], entry: Any | None = None, memo: PlanMemo | None = None,
             search: dict[str, Any] | None = None) -> Job:
    """The one place a Job is built, so a job named by hand equals the planner's job.
    ``entry`` (the sweep entry that lists it) brings the eval policy and capacity bounds;
    ``memo``, what the jobs of one plan share; ``search`` overrides the bounds and the
    workload's session fields (``infermatrix capacity``'s flags; part of the fingerprint like
    the rest of the measurement)."""
    from .evals import eval_steps  # evals/ loads accuracy.yaml only for a policy

    memo = memo or PlanMemo(cat)
    recipe = cat.recipes[recipe_id]
    if cat.workloads[workload].kind == "agentic":
        bounds = getattr(entry, "capacity", None)
        given = bounds.model_dump(exclude_none=True) if bounds is not None else {}
        capacity: CapacityMeasurement | None = capacity_measurement(
            cat, workload, recipe_id=recipe_id, **{**given, **(search or {})})
        concurrency, measurement = [], capacity
        timeout = _capacity_minutes(capacity)  # type: ignore[arg-type]
    else:
        capacity, measurement = None, LevelsMeasurement(concurrency=concurrency)
        timeout = memo.timeout_minutes(workload, concurrency)
    split = memo.launch_per_concurrency(recipe_id) and capacity is None
    return Job(
        id=job_id(recipe_id, workload, runner, concurrency, split), sweep=sweep_name,
        recipe=recipe_id, model=recipe.model, hardware=recipe.hardware,
        engine=recipe.engine.name, precision=recipe.precision, mode=recipe.topology.mode,
        workload=workload, runner=runner, launcher=cat.fleets[runner].kind,
        concurrency=concurrency, gpus=recipe.total_gpus, nodes=_nodes(cat, recipe_id, runner),
        fingerprint=fingerprint(cat, recipe_id, workload, runner, concurrency, capacity, memo),
        timeout_minutes=timeout, measurement=measurement,
        evals=eval_steps(cat, entry, workload, recipe.model, concurrency),
    )


def default_runner(cat: Catalog, recipe_id: str) -> str | None:
    """The first fleet (in fleets.yaml order) that can run the recipe."""
    return next(iter(_runner_labels(cat, recipe_id, None)), None)


def entry_listing(cat: Catalog, recipe_id: str, workload: str) -> tuple[str, Any] | None:
    """(sweep name, entry) of the first sweep entry that lists this recipe and workload."""
    for name, sweep in cat.sweeps.items():
        for entry in sweep.entries:
            if workload in entry.workloads and recipe_id in entry_recipes(cat, entry):
                return name, entry
    return None


def plan_sweep(cat: Catalog, sweep_name: str, filters: Filters | None = None) -> list[Job]:
    """Expand one sweep of the catalog into its jobs, in a deterministic order."""
    filters = filters or Filters()
    sweep = cat.sweeps[sweep_name]
    memo = PlanMemo(cat)
    jobs: dict[str, Job] = {}
    for entry in sweep.entries:
        for rid in entry_recipes(cat, entry):
            recipe = cat.recipes[rid]
            if not filters.allows(recipe=rid, model=recipe.model, hardware=recipe.hardware,
                                  engine=recipe.engine.name):
                continue
            for workload in entry.workloads:
                if not filters.allows(workload=workload):
                    continue
                for runner in _runner_labels(cat, rid, entry.runners):
                    if not filters.allows(runner=runner):
                        continue
                    split = memo.launch_per_concurrency(rid)
                    if cat.workloads[workload].kind == "agentic":
                        groups = [[]]  # one capacity search: it picks its own levels
                    elif split:
                        groups = [[c] for c in entry.concurrency]
                    else:
                        groups = [entry.concurrency]
                    for conc in groups:
                        job = make_job(cat, sweep_name, rid, workload, runner, conc, entry, memo)
                        jobs.setdefault(job.id, job)  # listed by two entries: runs once
    return list(jobs.values())
