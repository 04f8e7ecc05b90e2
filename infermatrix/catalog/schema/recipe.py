"""The schema of a recipe (recipes/**.yaml): a serving configuration and its parts (topology,
pools, parallelism, engine, container, router, KV transfer, speculative decoding, source)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ..placeholders import names_in, strings_in
from ..safety import Host, ImageRef, MountPath, NoControls, OptionName, Text, WebUrl, Word
from .field_types import ArgValue, Degree, Dtype, EnvMap, Name, Precision, Scalar, Strict, Tokens


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
