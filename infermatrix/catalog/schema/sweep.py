"""The schema of a sweep (matrix/sweeps/*.yaml): recipes × workloads × concurrency levels, with
accuracy evaluations and capacity-search bounds."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from ..accuracy import EvalPolicy
from .field_types import MAX_CONCURRENCY, Name, PositiveInt, Strict

# A capacity search's relative resolution, percent: coarser than this is not a measurement.
MAX_RESOLUTION_PCT = 50.0


class CapacitySearchSpec(Strict):
    """A sweep entry's bounds for the capacity search of its agentic workloads (the workload's
    own session settings apply where these are unset)."""

    start: PositiveInt = 1
    max_concurrency: PositiveInt = 4096
    resolution: PositiveInt = Field(default=1, description="stop bisecting when this close")
    resolution_pct: Annotated[float, Field(gt=0, le=MAX_RESOLUTION_PCT)] | None = Field(
        default=None, description="or when the bracket is within this percent of the passing "
        "level (the search then also guesses from the tier margins; docs/agentic.md)")
    time_budget_s: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="stop searching once this much time is spent per job")
    duration_s: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="measured seconds per level (default: the workload's)")
    warmup_s: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="unmeasured seconds per level (default: the workload's)")


class SweepEntry(Strict):
    recipes: list[str] = Field(min_length=1, description="recipe ids or globs")
    tags: list[str] = Field(default_factory=list,
                            description="keep only recipes with at least one of these tags")
    exclude_tags: list[str] = Field(default_factory=list,
                                    description="leave out recipes with any of these tags")
    workloads: list[Name] = Field(min_length=1)
    concurrency: list[Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)]] = Field(
        default_factory=list, description="levels of the fixed workloads (agentic ones search)")
    runners: list[str] | None = Field(
        default=None, description="runner labels; default: the first fleet with the recipe's hardware"
    )
    eval: EvalPolicy | None = Field(
        default=None, description="accuracy evaluations after some levels (docs/accuracy.md)")
    capacity: CapacitySearchSpec | None = Field(
        default=None, description="agentic workloads: capacity search bounds (docs/agentic.md)")
    seed_client: Literal["sglang.bench_serving", "benchmark_serving.py"] | None = Field(
        default=None, description="the client the source benchmarked with; docs/catalog.md "
        "prints its command next to ours")

    @field_validator("concurrency")
    @classmethod
    def _unique_sorted(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError("concurrency values must be unique")
        return sorted(v)


class Sweep(Strict):
    description: str = ""
    entries: list[SweepEntry] = Field(min_length=1)
