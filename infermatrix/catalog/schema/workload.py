"""The schema of matrix/workloads.yaml: a traffic shape, fixed (independent requests) or
agentic (closed-loop sessions judged against SLO tiers)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from ..distributions import check_distribution
from ..safety import CatalogPath
from .field_types import (
    MAX_COUNT,
    MAX_PER_CONCURRENCY,
    MAX_SECONDS,
    Figure,
    Name,
    PositiveInt,
    Strict,
    Tokens,
)


class SloTierSpec(Strict):
    """One SLO tier of an agentic workload: the fields of ``capacity.tiers.SloTier``."""

    name: Name
    min_output_speed: Figure = Field(
        description="P25 per-request output speed floor, tokens/s"
    )
    max_ttft_s: Figure = Field(description="P95 TTFT ceiling, seconds")


# What a synthetic session source draws (client.synthetic_sessions.SyntheticSpec's fields).
DistName = Literal[
    "sessions", "turns", "system_prompt_tokens", "user_tokens", "output_tokens", "tool_delay_s"
]


DistValue = Annotated[Any, AfterValidator(check_distribution)]  # number | str | mapping, as written


class AgenticSessions(Strict):
    """Where an agentic workload's sessions come from and how a level runs: the capacity
    search's settings for ``--workload`` (flags given there override them)."""

    source: Literal["synthetic", "trace", "mooncake"] = "synthetic"
    path: CatalogPath | None = Field(
        default=None, description="trace manifest or Mooncake JSONL, relative to the catalog root"
    )
    distributions: dict[DistName, DistValue] = Field(
        default_factory=dict,
        description="synthetic: sessions (a count), turns, system_prompt_tokens, user_tokens, "
        "output_tokens, tool_delay_s (see docs/agentic.md); unnamed ones keep the client's defaults",
    )
    duration_s: Annotated[float, Field(gt=0, le=MAX_SECONDS)] | None = Field(
        default=None, description="measured seconds per level")
    warmup_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)] | None = Field(
        default=None, description="unmeasured seconds per level")
    tool_delay_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)] | None = Field(
        default=None, description="mooncake: seconds between turns (the trace has none)")
    mid_session: bool = Field(default=True, description="warm-up lanes start mid-session")
    max_context_tokens: Tokens | None = Field(
        default=None, description="a session ends before its context would pass this")

    @field_validator("path")
    @classmethod
    def _path_needs_a_file_source(cls, v: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("source") == "synthetic":
            raise ValueError("a synthetic source reads no file (source: trace or mooncake)")
        return v

    @field_validator("distributions")
    @classmethod
    def _synthetic_only(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        source = info.data.get("source")
        if source in ("trace", "mooncake"):
            raise ValueError(f"distributions are for synthetic sessions, not {source}")
        count = v.get("sessions")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or not 1 <= count <= MAX_COUNT):
            raise ValueError("sessions is a count of distinct sessions: a positive integer "
                             f"up to {MAX_COUNT}")
        return v

    @field_validator("tool_delay_s")
    @classmethod
    def _mooncake_only(cls, v: float | None, info: ValidationInfo) -> float | None:
        if info.data.get("source") in ("synthetic", "trace"):
            raise ValueError("only for mooncake sessions (synthetic: distributions.tool_delay_s; "
                             "trace: each turn's simulated_tool_delay_ms_after)")
        return v

    @model_validator(mode="after")
    def _file_sources_need_a_path(self) -> AgenticSessions:
        if self.source != "synthetic" and not self.path:
            raise ValueError(f"a {self.source} source needs a path")
        return self


# Fields that shape a fixed workload's request list; an agentic workload has no use for them.
FIXED_ONLY = ("range_ratio", "prompts_per_concurrency", "min_prompts", "warmups_per_concurrency",
              "ignore_eos", "flush_cache_between_levels")
AGENTIC_ONLY = ("sessions", "slo_tiers")


class Workload(Strict):
    """A traffic shape. ``fixed``: independent requests of given lengths, prompt counts scaling
    with concurrency like InferenceMAX (10 × conc), run by the sweep planner. ``agentic``:
    closed-loop multi-turn sessions judged against SLO tiers, measured with
    ``infermatrix capacity --workload NAME`` (``isl``/``osl`` are then nominal labels, and the
    endpoint defaults to chat)."""

    kind: Literal["fixed", "agentic"] = "fixed"
    description: str = ""
    isl: Tokens | None = Field(
        default=None, validate_default=True,
        description="input tokens (agentic: optional nominal label, e.g. the mean context)")
    osl: Tokens | None = Field(
        default=None, validate_default=True,
        description="output tokens (agentic: optional nominal label, e.g. the median answer)")
    range_ratio: Annotated[float, Field(ge=0, le=1)] = Field(
        default=1.0, description="lengths drawn uniformly in [range_ratio × L, L]"
    )
    prompts_per_concurrency: Annotated[float, Field(gt=0, le=MAX_PER_CONCURRENCY)] = 10
    min_prompts: PositiveInt = 1
    warmups_per_concurrency: Annotated[float, Field(ge=0, le=MAX_PER_CONCURRENCY)] = 0
    ignore_eos: bool = True
    endpoint: Literal["completions", "chat"] = "completions"
    flush_cache_between_levels: bool = False
    max_error_rate: Annotated[float, Field(ge=0, le=1)] = 0.05
    sessions: AgenticSessions | None = Field(
        default=None, description="agentic: the session source and level settings")
    slo_tiers: list[SloTierSpec] = Field(
        default_factory=list,
        description="agentic: the tiers to search (none: AA-AgentPerf's SLO20 and SLO60)")

    @model_validator(mode="before")
    @classmethod
    def _agentic_talks_chat(cls, data: Any) -> Any:
        """Agents send conversations: an agentic workload's endpoint defaults to chat."""
        if isinstance(data, dict) and data.get("kind") == "agentic" and "endpoint" not in data:
            data = {**data, "endpoint": "chat"}
        return data

    @field_validator("isl", "osl")
    @classmethod
    def _fixed_needs_lengths(cls, v: int | None, info: ValidationInfo) -> int | None:
        if v is None and info.data.get("kind") == "fixed":
            raise ValueError("field required (a fixed workload needs isl and osl)")
        return v

    @field_validator(*FIXED_ONLY, mode="before")
    @classmethod
    def _not_for_agentic(cls, v: Any, info: ValidationInfo) -> Any:
        if info.data.get("kind") == "agentic":
            raise ValueError("only for kind: fixed (agentic sessions set their own lengths, "
                             "count and exact output)")
        return v

    @field_validator(*AGENTIC_ONLY, mode="before")
    @classmethod
    def _only_for_agentic(cls, v: Any, info: ValidationInfo) -> Any:
        if info.data.get("kind", "fixed") != "agentic":
            raise ValueError("only for kind: agentic")
        return v

    @field_validator("slo_tiers")
    @classmethod
    def _unique_tiers(cls, v: list[SloTierSpec]) -> list[SloTierSpec]:
        names = [t.name for t in v]
        if len(set(names)) != len(names):
            raise ValueError(f"tier names must be unique, got {names}")
        return v

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A fixed workload dumps exactly as before agentic workloads existed: job
        fingerprints hash this dump."""
        data = handler(self)
        if self.kind == "fixed" and isinstance(data, dict):
            for name in AGENTIC_ONLY:
                data.pop(name, None)
        return data

    def num_prompts(self, concurrency: int) -> int:
        return max(self.min_prompts, round(self.prompts_per_concurrency * concurrency))

    def num_warmups(self, concurrency: int) -> int:
        return round(self.warmups_per_concurrency * concurrency)
