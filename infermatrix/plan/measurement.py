"""What a job measures, settled by the planner: concurrency levels of a fixed workload, or an
agentic capacity search per SLO tier. Plain data (no client import): a runner reads it from the
job file and needs nothing else from the catalog's workload or sweep files.

The capacity measurement carries the session source (paths relative to the catalog root, so a
job file is portable between a laptop and a CI runner), the tiers, the search bounds and the
time budget; ``capacity_measurement`` is the one constructor, used by the planner, by ``run
--recipe … --workload …`` and by ``infermatrix capacity --workload``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from ..catalog.accuracy import EvalTask
from ..catalog.loader import Catalog
from ..catalog.schema import MAX_RESOLUTION_PCT, SloTierSpec

# AA-AgentPerf's published tiers for DeepSeek V4 Pro: the default when a workload names none.
DEFAULT_TIERS = (
    SloTierSpec(name="SLO20", min_output_speed=20.0, max_ttft_s=10.0),
    SloTierSpec(name="SLO60", min_output_speed=60.0, max_ttft_s=5.0),
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LevelsMeasurement(Strict):
    """Fixed-length requests at each concurrency level, one server launch for all of them."""

    kind: Literal["levels"] = "levels"
    concurrency: list[PositiveInt] = Field(min_length=1)


class SessionPlan(Strict):
    """Where the agents' sessions come from and how one level runs."""

    source: Literal["synthetic", "trace", "mooncake"] = "synthetic"
    path: str | None = Field(None, description="trace manifest / Mooncake JSONL, catalog-relative")
    synthetic: list[str] = Field(default_factory=list, description="NAME=DIST items")
    tool_delay_s: float = Field(1.0, ge=0, description="mooncake: seconds between turns")
    block_size: PositiveInt = 512
    duration_s: float = Field(120.0, gt=0, description="measured seconds per level")
    warmup_s: float = Field(30.0, ge=0, description="unmeasured seconds per level")
    mid_session: bool = True
    max_context_tokens: PositiveInt | None = None
    seed: int = 0


class CapacityMeasurement(Strict):
    """The highest number of closed-loop agents that passes each SLO tier."""

    kind: Literal["capacity"] = "capacity"
    tiers: list[SloTierSpec] = Field(min_length=1)
    sessions: SessionPlan
    start: PositiveInt = 1
    max_concurrency: PositiveInt = 4096
    resolution: PositiveInt = 1
    resolution_pct: Annotated[float, Field(gt=0, le=MAX_RESOLUTION_PCT)] | None = Field(
        None, description="stop also when the bracket is within this percent of the pass")
    max_error_rate: Annotated[float, Field(ge=0, le=1)] = 0.05
    time_budget_s: Annotated[float, Field(gt=0)] | None = Field(
        None, description="stop searching (tiers reported unbounded) once this much time is spent")

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Unset, ``resolution_pct`` is left out: job files and fingerprints of searches that
        do not use it stay as they were before it existed."""
        data = handler(self)
        if self.resolution_pct is None and isinstance(data, dict):
            data.pop("resolution_pct", None)
        return data


class EvalStep(Strict):
    """One accuracy evaluation the planner settled: which task, with which settings and
    threshold, after which level. ``error``: the evaluation cannot be set up (a broken
    accuracy.yaml, an unknown task) and is recorded as failed rather than skipped."""

    after: PositiveInt = Field(description="run after this concurrency level")
    task: str
    spec: EvalTask | None = None
    threshold: float | None = None
    error: str | None = None


Measurement = Annotated[LevelsMeasurement | CapacityMeasurement, Field(discriminator="kind")]


def dist_text(v: Any) -> str:
    """A workload's distribution (number, flag text or mapping) as ``NAME=DIST`` flag text."""
    if isinstance(v, dict):
        rest = ",".join(f"{k}={x}" for k, x in v.items() if k != "kind")
        return f"{v.get('kind', 'constant')}:{rest}"
    return str(v)


def capacity_measurement(cat: Catalog, workload: str, recipe_id: str | None = None,
                         **search: Any) -> CapacityMeasurement:
    """The capacity search an agentic workload describes; ``search`` overrides the bounds
    (start, max_concurrency, resolution, resolution_pct, time_budget_s), the tiers and error
    rate, and session fields (duration_s, synthetic, …). With ``recipe_id``, an agent keeps its conversation within what that
    server takes: where the recipe's context is shorter than the workload's limit, a session
    ends (and the agent starts afresh) before its next turn would pass it, instead of sending
    requests bound to fail."""
    wl = cat.workloads[workload]
    if wl.kind != "agentic":
        raise ValueError(f"workload {workload!r} is {wl.kind}, not agentic")
    ses = wl.sessions
    recipe = cat.recipes.get(recipe_id) if recipe_id else None
    cap = ses.max_context_tokens if ses is not None else None
    if recipe is not None and recipe.max_model_len and (cap is None or recipe.max_model_len < cap):
        search.setdefault("max_context_tokens", recipe.max_model_len)
    session_fields: dict[str, Any] = {}
    if ses is not None:
        session_fields = {
            "source": ses.source,
            "path": ses.path,
            "synthetic": [f"{k}={dist_text(v)}" for k, v in ses.distributions.items()],
            "mid_session": ses.mid_session,
            "max_context_tokens": ses.max_context_tokens,
            **{k: v for k in ("duration_s", "warmup_s", "tool_delay_s")
               if (v := getattr(ses, k)) is not None},
        }
    for name in SessionPlan.model_fields:
        if name in search:
            session_fields[name] = search.pop(name)
    search.setdefault("tiers", list(wl.slo_tiers) or list(DEFAULT_TIERS))
    search.setdefault("max_error_rate", wl.max_error_rate)
    return CapacityMeasurement(sessions=SessionPlan(**session_fields), **search)
