"""The catalog's typed schema: hardware, models, recipes, workloads, sweeps and fleets.

Every model forbids unknown keys, so a typo in a YAML file is an error, not a silent default.
Cross-file checks (references resolve, parallelism fits the hardware) live in validate.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from .accuracy import EvalPolicy
from .distributions import check_distribution
from .placeholders import names_in
from .safety import (
    AbsPath,
    CatalogPath,
    EnvName,
    Host,
    ImageRef,
    MountPath,
    NoControls,
    NodeList,
    OptionName,
    PathText,
    SlurmArg,
    SlurmName,
    Text,
    UserName,
    WebUrl,
    Word,
)

Name = Annotated[str, Field(min_length=1, max_length=200,
                            pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")]
# Bounds on what a benchmark can use: beyond them a value is a typo (or an attack), and
# arithmetic on it (prompt counts, time-outs) would overflow or run for ever.
MAX_COUNT = 10**9  # model dimensions, bytes per token, prompt counts
MAX_TOKENS = 1 << 24  # sequence lengths and context windows (16.7M tokens)
MAX_CONCURRENCY = 1 << 20  # concurrent requests per level
MAX_GPUS = 1 << 16  # parallel degrees, instances, GPUs and nodes of a fleet
MAX_PER_CONCURRENCY = 10_000  # prompts or warm-ups per unit of concurrency
MAX_FIGURE = 1e12  # any physical figure (GB, TB/s, TFLOP/s, W, $/h, tokens/s)
MAX_SECONDS = 7 * 24 * 3600.0  # durations and delays
PositiveInt = Annotated[int, Field(ge=1, le=MAX_COUNT)]
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
Degree = Annotated[int, Field(ge=1, le=MAX_GPUS)]
Figure = Annotated[float, Field(gt=0, le=MAX_FIGURE)]
Dtype = Literal["bf16", "fp16", "fp8", "fp4", "int8"]

# Precision name -> (dtype the matmuls run in, bytes per weight parameter incl. block scales).
PRECISIONS: dict[str, tuple[str, float]] = {
    "bf16": ("bf16", 2.0),
    "fp16": ("fp16", 2.0),
    "fp8": ("fp8", 1.0),
    "nvfp4": ("fp4", 0.5625),  # 4-bit values + one fp8 scale per 16
    "mxfp4": ("fp4", 0.53125),  # 4-bit values + one e8m0 scale per 32
    "fp4": ("fp4", 0.5625),
    "w8a8-int8": ("int8", 1.0),
    "w4a8": ("int8", 0.5625),
    # 4-bit weights dequantised to bf16 in the kernel (e.g. FP4 experts through Marlin on
    # Hopper, which has no FP4 tensor cores): FP4 memory, bf16 compute.
    "w4a16": ("bf16", 0.5625),
}
Precision = Literal["bf16", "fp16", "fp8", "nvfp4", "mxfp4", "fp4", "w8a8-int8", "w4a8", "w4a16"]

# A value that may follow a command-line flag or sit in an engine config file.
Scalar = str | int | float | bool
# an environment: variable names (GNU env would read '-S...' as its option) and values free
# of control characters
EnvMap = dict[EnvName, Annotated[Scalar, NoControls]]
ArgValue = Scalar | list[Any] | dict[str, Any] | None



class Strict(BaseModel):
    # strict: a boolean is not a number (concurrency: true is not 1) and numbers are not text;
    # no inf/nan anywhere
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# --------------------------------------------------------------------------- hardware, models


class Hardware(Strict):
    """One accelerator as a performance model needs it. Figures are per GPU (or NPU die)."""

    vendor: Literal["nvidia", "amd", "huawei", "cpu"]
    display_name: str
    memory_gb: Figure
    hbm_tbps: Figure
    tflops: dict[Dtype, Figure]
    gpus_per_node: Degree
    scale_up_domain: Degree = Field(
        description="GPUs that share the scale-up fabric (8 on an HGX node, 72 on an NVL72 rack)"
    )
    scale_up_gbps: Figure = Field(
        description="per-GPU unidirectional scale-up bandwidth, GB/s"
    )
    tdp_w: Figure
    usd_per_gpu_hour: Figure
    profile: str | None = Field(
        default=None,
        description="measured operator profile the simulator times this hardware's GEMMs and "
        "attention with: a built-in name (infermatrix/sim/data/profiles/NAME.json) or a path "
        "relative to the catalog root, as `infermatrix sim profile` writes it (docs/sim.md)",
    )

    @field_validator("tflops")
    @classmethod
    def _has_bf16(cls, v: dict[str, float]) -> dict[str, float]:
        if "bf16" not in v and "fp16" not in v:
            raise ValueError("must give at least bf16 (or fp16) TFLOP/s")
        return v


class MixedPrecision(Strict):
    """The precisions a checkpoint stores its routed experts and everything else in."""

    experts: Precision
    rest: Precision

    @model_validator(mode="after")
    def _mixed(self) -> MixedPrecision:
        if self.experts == self.rest:
            raise ValueError(f"experts and rest are both {self.experts}: not a mixed checkpoint "
                             "(leave the entry out)")
        return self


class Model(Strict):
    """What a performance model and a launcher need to know about one model."""

    hf_id: Word
    display_name: str
    total_params_b: Figure
    active_params_b: Figure
    layers: PositiveInt
    hidden_size: PositiveInt
    attention_heads: PositiveInt
    kv_heads: PositiveInt
    head_dim: PositiveInt | None = Field(
        default=None,
        description="attention head dimension, where it is not hidden_size / attention_heads "
        "(config.json head_dim: Qwen3 128, gpt-oss 64)",
    )
    attention: Literal["mha", "gqa", "mla", "mla-sparse", "mla-compressed", "gqa-sliding"]
    kv_bytes_per_token: dict[Dtype, PositiveInt] = Field(
        description="KV-cache bytes per token summed over all layers, per KV dtype"
    )
    max_context: Tokens
    moe_experts: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0
    moe_active_experts: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0
    mixed_precision: dict[Precision, MixedPrecision] = Field(
        default_factory=dict,
        description="where the checkpoint served at a recipe's precision stores its routed "
        "experts and its other weights (attention, router, dense and shared MLPs, embeddings, "
        "LM head) at different precisions: that precision -> {experts, rest}. gpt-oss "
        "{mxfp4: {experts: mxfp4, rest: bf16}}; a precision not listed holds every weight",
    )

    @field_validator("mixed_precision")
    @classmethod
    def _mixed_needs_experts(cls, value: dict[str, MixedPrecision],
                             info: ValidationInfo) -> dict[str, MixedPrecision]:
        experts, active = info.data.get("moe_experts", 0), info.data.get("moe_active_experts", 0)
        if value and experts <= active:
            raise ValueError("only a model with routed experts (moe_experts above "
                             "moe_active_experts) can store them at a precision of their own")
        return value

    @model_validator(mode="after")
    def _active_le_total(self) -> Model:
        if self.active_params_b > self.total_params_b:
            raise ValueError("active_params_b cannot exceed total_params_b")
        if self.attention_heads % self.kv_heads:
            raise ValueError("attention_heads must be a multiple of kv_heads")
        return self

    @property
    def expert_params_b(self) -> float:
        """Parameters in routed experts, billions."""
        return routed_expert_params(self.total_params_b, self.active_params_b,
                                    self.moe_experts, self.moe_active_experts)

    def param_bytes(self, precision: str) -> tuple[float, float]:
        """Bytes per parameter of (the routed experts, every other weight) at a run's
        precision: the precision's own for both unless the checkpoint mixes them."""
        mixed = self.mixed_precision.get(precision)  # type: ignore[call-overload]
        if mixed is None:
            return PRECISIONS[precision][1], PRECISIONS[precision][1]
        return PRECISIONS[mixed.experts][1], PRECISIONS[mixed.rest][1]

    def weight_bytes_b(self, precision: str) -> float:
        """Bytes of all weights at a run's precision, billions."""
        experts, rest = self.param_bytes(precision)
        routed = self.expert_params_b
        return routed * experts + (self.total_params_b - routed) * rest


def routed_expert_params(total: float, active: float, experts: int, per_token: int) -> float:
    """Parameters in routed experts: (total − active) / (E − k) per expert, × E; 0 for a dense
    model (the embeddings, attention and shared parts are what every token uses)."""
    if experts <= per_token or experts == 0:
        return 0.0
    return (total - active) / (experts - per_token) * experts


# --------------------------------------------------------------------------- recipes


class Parallel(Strict):
    """Parallelism of one instance.

    GPUs per instance = tp × pp × (1 if attention_dp else dp): with attention data parallelism
    (SGLang --enable-dp-attention, TensorRT-LLM enable_attention_dp) the dp attention groups
    live inside the tp group, otherwise each data-parallel replica has its own GPUs.
    With attention_dp and no dp given, dp = tp (one attention replica per rank: TensorRT-LLM's
    enable_attention_dp always means that).
    """

    tp: Degree = 1
    pp: Degree = 1
    dp: Degree = 1
    ep: Degree = 1
    cp: Degree = 1
    attention_dp: bool = False

    @model_validator(mode="before")
    @classmethod
    def _default_attention_dp(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("attention_dp") is True and "dp" not in data:
            data = {**data, "dp": data.get("tp", 1)}
        return data

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * (1 if self.attention_dp else self.dp)

    @property
    def attention_tp(self) -> int:
        return self.tp // self.dp if self.attention_dp else self.tp

    @model_validator(mode="after")
    def _consistent(self) -> Parallel:
        if self.attention_dp and self.tp % self.dp:
            raise ValueError(f"with attention_dp, tp ({self.tp}) must be divisible by dp ({self.dp})")
        if self.gpus % self.ep:
            raise ValueError(f"ep ({self.ep}) must divide the instance's {self.gpus} GPUs")
        return self


class SpecDecode(Strict):
    """Speculative decoding. ``draft_tokens`` = tokens proposed per verification step
    (TensorRT-LLM num_nextn_predict_layers / max_draft_len, vLLM num_speculative_tokens,
    SGLang --speculative-num-steps with top-k 1)."""

    method: Literal["mtp", "eagle", "eagle3", "nextn", "ngram", "draft"]
    draft_tokens: Annotated[int, Field(ge=1, le=1024)]
    topk: Annotated[int, Field(ge=1, le=1024)] = 1
    acceptance_rate: Annotated[float, Field(ge=0, le=1)] | None = Field(
        default=None, description="expected fraction of draft tokens accepted (used by the sim)"
    )


class Pool(Strict):
    """A group of identical server instances with one role.

    ``args`` are command-line flags in the order they are written; ``config`` is the engine's
    config file where it reads one (TensorRT-LLM ``--config gen_config.yaml``). Flags the
    engine derives from the schema (model, host, port, parallelism, disaggregation,
    speculative decoding) come first unless ``args`` names them, in which case they render
    there, and must agree with the schema.
    See docs/recipes.md for the value conventions (true, null, lists, "flag=" keys).
    """

    role: Literal["both", "prefill", "decode"] = "both"
    instances: Degree = 1
    parallel: Parallel = Parallel()
    args: dict[Text, ArgValue] = Field(default_factory=dict)
    config: dict[Text, ArgValue] = Field(
        default_factory=dict, description="keys of the engine's config file (TensorRT-LLM --config)"
    )
    env: EnvMap = Field(default_factory=dict)
    port: int | None = Field(default=None, ge=1, le=65535,
                             description="first instance's port; later instances count up")
    bootstrap_port: int | None = Field(default=None, ge=1, le=65535,
                                       description="SGLang prefill bootstrap port (default 8998)")
    dist_init_port: int | None = Field(default=None, ge=1, le=65535,
                                       description="rendezvous port of multi-node instances")
    spec_decode: SpecDecode | None = Field(
        default=None, description="this pool's speculative decoding, when it differs from the recipe's"
    )

    @property
    def gpus(self) -> int:
        return self.instances * self.parallel.gpus


class Topology(Strict):
    mode: Literal["aggregated", "disaggregated"] = "aggregated"
    pools: list[Pool] = Field(min_length=1)

    @model_validator(mode="after")
    def _roles_match_mode(self) -> Topology:
        roles = [p.role for p in self.pools]
        if self.mode == "aggregated" and set(roles) != {"both"}:
            raise ValueError("an aggregated topology has only pools of role 'both'")
        if self.mode == "disaggregated" and sorted(set(roles)) != ["decode", "prefill"]:
            raise ValueError("a disaggregated topology needs prefill and decode pools, and no 'both'")
        return self

    def gpus(self, role: str | None = None) -> int:
        return sum(p.gpus for p in self.pools if role is None or p.role == role)


class Engine(Strict):
    name: Literal["vllm", "sglang", "trtllm"]
    version: Text
    image: ImageRef | None = Field(default=None, description="container image; none: bare metal / unpublished")


class Container(Strict):
    """How the engine's container is started (docker run). Devices default by GPU vendor."""

    detach: bool = False
    gpus: Word | None = Field(default="all", description="NVIDIA only: docker --gpus value")
    devices: list[MountPath] | None = Field(default=None, description="default: the vendor's device files")
    shm_size: Word | None = "32g"
    ipc: Word | None = None
    network: Word | None = "host"
    privileged: bool = False
    mounts: dict[MountPath, MountPath] = Field(default_factory=dict, description="host path -> container path")
    equals: list[OptionName] = Field(
        default_factory=list, description="docker options written --option=value (as published)"
    )


class Router(Strict):
    name: Literal["sglang-router", "vllm-router", "trtllm-disaggregated", "dynamo"]
    policy: Word = "round_robin"
    host: Host | None = Field(default=None, description="bind address (default 0.0.0.0)")
    port: int | None = Field(default=None, ge=1, le=65535)
    args: dict[Text, ArgValue] = Field(default_factory=dict)
    env: EnvMap = Field(default_factory=dict)
    config: dict[Text, ArgValue] = Field(
        default_factory=dict, description="extra keys of the router's config file (TensorRT-LLM)"
    )


class KvTransfer(Strict):
    backend: Literal["nixl", "mooncake", "ascend", "ucx", "nccl", "lmcache"]
    args: dict[Text, ArgValue] = Field(default_factory=dict)


class Source(Strict):
    """Where a configuration was published: every recipe names one."""

    document: Text
    submitted_by: Text
    url: WebUrl | None = None
    notes: str | None = Field(default=None, description="free text; shown escaped, as text")


def strings_in(value: Any) -> Iterator[str]:
    """Every string in a YAML-shaped value: scalars, mapping keys and values, list items."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


class Recipe(Strict):
    """A serving configuration: model × hardware × engine × precision × topology."""

    model: Name
    checkpoint: Word | None = Field(
        default=None, description="weights actually served (HF id or path); default: the model's hf_id"
    )
    hardware: Name
    engine: Engine
    precision: Precision
    kv_cache_dtype: Dtype | None = None
    topology: Topology
    router: Router | None = None
    kv_transfer: KvTransfer | None = None
    spec_decode: SpecDecode | None = None
    env: EnvMap = Field(default_factory=dict, description="environment of every worker")
    container: Container | None = Field(default=None, description="default: Container()")
    params: dict[Text, Annotated[Scalar, NoControls]] = Field(
        default_factory=dict,
        description="values for ${NAME} placeholders; MODEL, PORT, HOST and CONC are bound at run time",
    )
    max_model_len: Tokens | None = None
    tags: list[str] = Field(default_factory=list)
    source: Source

    @model_validator(mode="after")
    def _disaggregated_needs_router(self) -> Recipe:
        if self.topology.mode == "disaggregated":
            missing = [n for n, v in (("router", self.router), ("kv_transfer", self.kv_transfer)) if v is None]
            if missing:
                raise ValueError(f"a disaggregated topology needs {' and '.join(missing)}")
        elif sum(p.instances for p in self.topology.pools) > 1 and self.router is None:
            raise ValueError("more than one instance needs a router in front of them")
        return self

    @property
    def total_gpus(self) -> int:
        return self.topology.gpus()

    def spec_for(self, pool: Pool) -> SpecDecode | None:
        return pool.spec_decode or self.spec_decode

    def placeholders(self) -> set[str]:
        """Every ${NAME} used anywhere in the recipe's args, env, router and container."""
        parts: list[Any] = [self.env]
        for pool in self.topology.pools:
            parts += [pool.args, pool.config, pool.env]
        if self.router:
            parts += [self.router.args, self.router.env, self.router.config]
        if self.container:
            parts.append(self.container.mounts)
        return {name for text in strings_in(parts) for name in names_in(text)}

    @property
    def launch_per_concurrency(self) -> bool:
        """True when a server flag depends on the concurrency (e.g. --max-num-seqs $CONC)."""
        return "CONC" in self.placeholders()


class RecipeFamily(Strict):
    """A recipe file that stands for several recipes: the rest of the file is a template whose
    ``${axis}`` references (lower-case names) take each point's values, e.g. TensorRT-LLM's
    submit.sh sweeping disaggr_torch.slurm's positional parameters. Variant ids are
    ``<file id>/<name>`` with ``name`` formatted from the point."""

    name: str = Field(description="variant name template, e.g. ctx${num_ctx_servers}-gen${num_gen_servers}")
    axes: dict[str, list[Scalar]] = Field(default_factory=dict, description="crossed with each other")
    points: list[dict[str, Scalar]] = Field(default_factory=list, description="explicit points")

    @model_validator(mode="after")
    def _has_points(self) -> RecipeFamily:
        if not self.axes and not self.points:
            raise ValueError("a family needs axes or points")
        return self

    def variants(self) -> list[dict[str, Scalar]]:
        crossed: list[dict[str, Scalar]] = [{}]
        for axis, values in self.axes.items():
            crossed = [{**c, axis: v} for c in crossed for v in values]
        return [{**p, **c} for p in (self.points or [{}]) for c in crossed]


FAMILY_REF = re.compile(r"\$\{([a-z][a-z0-9_]*)\}")


def _axis_text(value: Scalar) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def instantiate(template: Any, point: dict[str, Scalar]) -> Any:
    """The template with ``${axis}`` replaced: a whole-string reference takes the value's type."""
    if isinstance(template, str):
        whole = FAMILY_REF.fullmatch(template)
        if whole and whole.group(1) in point:
            return point[whole.group(1)]
        return FAMILY_REF.sub(
            lambda m: _axis_text(point[m.group(1)]) if m.group(1) in point else m.group(0), template
        )
    if isinstance(template, dict):
        return {instantiate(k, point): instantiate(v, point) for k, v in template.items()}
    if isinstance(template, list):
        return [instantiate(v, point) for v in template]
    return template


def unknown_axes(template: Any, point: dict[str, Scalar]) -> set[str]:
    """``${axis}`` references in a template that the point gives no value for."""
    return {n for text in strings_in(template) for n in FAMILY_REF.findall(text) if n not in point}


# --------------------------------------------------------------------------- workloads, sweeps


class SloTierSpec(Strict):
    """One SLO tier of an agentic workload: the fields of ``capacity.tiers.SloTier``."""

    name: Name
    min_output_speed: Figure = Field(
        description="P25 per-request output speed floor, tokens/s"
    )
    max_ttft_s: Figure = Field(description="P95 TTFT ceiling, seconds")


# What a synthetic session source draws (client.session_sources.SyntheticSpec's fields).
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


class Fleet(Strict):
    """A pool of self-hosted runners that share one label and one kind of cluster.

    Its values reach #SBATCH lines, ssh command lines and paths: each has a pattern (or at
    least no control character), checked here so no fleet can inject a command."""

    hardware: Name
    kind: Literal["docker", "slurm", "ssh", "local"]
    gpus_per_node: Annotated[int, Field(ge=1, le=1024)]
    nodes: Degree = 1
    partition: SlurmName | None = None
    account: SlurmName | None = None
    model_cache: PathText | None = None
    mounts: dict[MountPath, MountPath] = Field(default_factory=dict)
    env: EnvMap = Field(default_factory=dict)
    exclude_nodes: list[NodeList] = Field(default_factory=list)
    hosts: list[Host] = Field(default_factory=list)
    # How `infermatrix run` starts processes here (launch/): all optional, facts of the fleet.
    model_dir: PathText | None = Field(
        default=None, description="folder of checkpoints as plain directories: ${MODEL} is "
        "model_dir/<checkpoint>; unset: ${MODEL} is the HF id (resolved through the HF cache)")
    commands: dict[Text, list[Text]] = Field(
        default_factory=dict, description="argv prefixes replaced on this fleet, e.g. 'vllm serve' "
        "-> a CPU build's module entry point; tokens starting with ./ are relative to the repo")
    container_image: dict[ImageRef, ImageRef] = Field(
        default_factory=dict, description="engine image -> image to run instead (a local mirror, "
        "or a squashfs file for Pyxis/enroot)")
    slurm_args: list[SlurmArg] = Field(
        default_factory=list, description="extra salloc/sbatch options (--qos=..., --reservation=...)")
    time_limit_minutes: Annotated[int, Field(ge=1, le=int(MAX_SECONDS) // 60)] | None = Field(
        default=None, description="SLURM allocation time limit (default: the job's time-out)")
    ssh_user: UserName | None = None
    workdir: AbsPath | None = Field(
        default=None, description="ssh fleets: shared folder on the hosts for logs and files")

    @field_validator("commands")
    @classmethod
    def _commands_start_with_a_program(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for prefix, argv in v.items():
            if not argv or argv[0].startswith("-"):
                raise ValueError(f"{prefix!r}: the replacement starts with a program, not an option")
        return v

    @model_validator(mode="after")
    def _fields_fit_the_kind(self) -> Fleet:
        """What launching would otherwise find out on the cluster, or silently ignore."""
        if self.kind == "ssh" and len(self.hosts) < self.nodes:
            raise ValueError(f"an ssh fleet lists its hosts: {self.nodes} nodes, "
                             f"{len(self.hosts)} hosts")
        slurm_only = [n for n in ("partition", "account", "slurm_args", "exclude_nodes",
                                  "time_limit_minutes") if getattr(self, n)]
        if self.kind != "slurm" and slurm_only:
            raise ValueError(f"{', '.join(slurm_only)}: only for kind: slurm")
        ssh_only = [n for n in ("hosts", "ssh_user", "workdir") if getattr(self, n)]
        if self.kind != "ssh" and ssh_only:
            raise ValueError(f"{', '.join(ssh_only)}: only for kind: ssh")
        return self

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes
