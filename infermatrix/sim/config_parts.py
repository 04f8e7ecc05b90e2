"""SimConfig.from_parts: one engine instance's numbers from catalog facts (a hardware entry, a
model, a precision) and the engine knobs a recipe or a caller sets, with each engine's own
defaults where they are unset. SimConfig takes it as its constructor (config.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Protocol, TypeVar

from ..catalog.loader import Catalog
from ..catalog.schema import PRECISIONS, Hardware, Model
from .coverage import warn_if_unknown
from .engine_defaults import (
    GIB,
    V0_MAX_NUM_SEQS,
    V0_MIN_BATCHED_TOKENS,
    default_limits,
    sglang_rank_chunk,
    unchunked_prefill,
)
from .engine_memory import GB, USABLE_MEMORY, engine_reserve
from .errors import SimConfigError
from .names import precision_name, resolve
from .profiles import ProfileError, profile_path
from .router import canonical_policy
from .tables import default_tables, release
from .tuning import DEFAULT_TUNING, Tuning

# engines whose max batch size / token budget count per attention-DP rank (TensorRT-LLM
# max_batch_size and max_num_tokens; vLLM runs one engine core per DP rank)
PER_RANK_ENGINES = ("trtllm", "vllm")


class Built(Protocol):
    """What from_parts reads back of the config it builds (a SimConfig; named here so that
    config.py, whose constructor this is, is not imported back): a dataclass, as replace
    asks, with its memory numbers and its check."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    memory_bytes: float
    reserved_bytes: float

    @property
    def weight_bytes_per_gpu(self) -> float: ...

    def check(self) -> None: ...


C = TypeVar("C", bound=Built)


def from_parts(
    cls: type[C], catalog: Catalog | None, hardware: str | Hardware, model: str | Model,
    precision: str, *,
    tp: int = 1, pp: int = 1, dp: int = 1, ep: int = 1, attention_dp: bool = False,
    moe_a2a: bool = False,
    kv_dtype: str | None = None, served_model_name: str | None = None,
    max_num_seqs: int | None = None, max_num_batched_tokens: int | None = None,
    memory_fraction: float | None = None, block_size: int | None = None,
    prefix_caching: bool = True, max_model_len: int | None = None,
    spec_draft_tokens: int = 0, spec_acceptance: float | None = None,
    kv_free_fraction: float | None = None, stream_interval: int = 1, recv_interval: int = 1,
    instances: int = 1,
    router_policy: str = "round_robin", tuning: Tuning = DEFAULT_TUNING, engine: str = "vllm",
    engine_version: str | None = None,
    per_rank_limits: bool | None = None, graph_max_seqs: int = -1, graph_max_tokens: int = 0,
    attention_cp: int = 1, offline: bool = False,
    reserve_to_completion: bool | None = None, mixed_chunk: bool = False,
    rocm_aiter: bool = True, chunked_prefill: bool | None = None, overlap_intake: bool = True,
    spec_v2: bool = False, dp_sync: bool = True, prefill_graphs: bool | None = None,
    prefill_graph_max_tokens: int = 0,
) -> C:
    """A config from hardware and model (catalog names or schema objects) and knobs.

    ``engine`` (vllm, sglang, trtllm) picks the engine's overheads and limit semantics: under
    attention data parallelism TensorRT-LLM's and vLLM's max batch size and token budget are
    per rank (the instance admits dp × as many, each rank at most its own token budget a
    step: ``rank_tokens``), SGLang's are for the whole instance, and each SGLang DP rank
    prefills at most its share of the token budget a step (``rank_prefill_only``:
    engine_defaults.sglang_rank_chunk).
    ``per_rank_limits`` overrides that. ``engine_version`` picks the tables' rows for that
    engine's builds from a version on. ``moe_a2a``: an all-to-all backend (SGLang's
    ``--moe-a2a-backend deepep``) dispatches tokens to the experts' GPUs even under attention
    TP. ``graph_max_seqs`` is the largest decode batch per
    rank the engine captured as a CUDA/NPU graph (-1: all, 0: none); ``graph_max_tokens``
    gives it in tokens (vLLM's capture sizes count a sequence's draft tokens too).
    ``reserve_to_completion`` (default: TensorRT-LLM only) admits a request only with the
    KV of its whole prompt + output reserved (TensorRT-LLM's GUARANTEED_NO_EVICT).
    ``mixed_chunk`` (SGLang's ``--enable-mixed-chunk``) lets SGLang's decoders ride along
    in a step that prefills; otherwise they wait it out (``prefill_alone``). Under
    attention DP without speculative decoding only the prefilling rank's decoders would
    wait (the other ranks decode in the same synchronised step), which the mixed step
    stands in for; with speculative decoding every rank idles (SGLang prepares idle
    batches for the whole DP group). ``rocm_aiter`` (AMD): False where the engine runs
    without AITER's kernels. ``chunked_prefill`` False (vLLM's ``--no-enable-chunked-prefill``;
    None: the build's default, off for vLLM V0 serving an MLA model) makes vLLM prefill whole
    prompts in steps without decodes, up to max(max_model_len, 2,048) tokens a step
    (``whole_prompts``, ``prefill_alone``); for SGLang (``--chunked-prefill-size -1``) it
    keeps an attention-DP rank's budget whole. ``spec_v2`` (SGLang's ``SGLANG_ENABLE_SPEC_V2``):
    speculative steps keep the overlap scheduler; ``dp_sync`` False
    (``SGLANG_SCHEDULER_SKIP_ALL_GATHER``): attention-DP ranks skip their per-step metadata
    exchange. ``prefill_graphs`` True / False: the deployment turns piecewise graphs for
    steps that prefill on or off itself (None: the engine decides, prefill_graphs.py);
    ``prefill_graph_max_tokens`` caps the step they capture."""
    hw, hw_name = lookup(catalog, "hardware", hardware)
    warn_if_unknown(hw_name, hw.vendor)  # generic defaults stand in: say so
    mdl, model_name = lookup(catalog, "model", model)
    named = precision_name(precision, PRECISIONS)
    if named is None:
        raise SimConfigError(f"unknown precision {precision!r} (known: {', '.join(PRECISIONS)})")
    precision = named
    dtype = PRECISIONS[precision][0]
    bytes_per_param, rest_bytes = mdl.param_bytes(precision)
    mixed = mdl.mixed_precision.get(precision)  # type: ignore[call-overload]
    if precision == "mxfp4" and hw.vendor == "nvidia" and "fp4" in hw.tflops:
        # Blackwell's FP4 tensor cores pair FP4 with FP4 only for NVFP4; MXFP4 weights
        # (gpt-oss) run against MXFP8 activations (TensorRT-LLM W4A8_MXFP4_MXFP8, vLLM's
        # SM100 FP4×FP8 backends), at the FP8 rate. Hopper has no FP4×FP8 path: vLLM's SM90
        # MXFP4 backends (FlashInfer BF16, Marlin, Triton) and TensorRT-LLM's Hopper gpt-oss
        # (w4a16 in its perf overview) run BF16 activations, as the fallback below does.
        dtype = "fp8"
    if dtype == "fp4" and dtype not in hw.tflops:
        # no FP4 tensor cores (Hopper, MI300X/MI325X): the 4-bit weights are dequantised
        # to bf16 inside the kernel (Marlin on NVIDIA, Triton's MXFP4 matmul on ROCm, as
        # vLLM and SGLang run gpt-oss and FP4 checkpoints there): FP4 memory, bf16 compute
        dtype = "bf16"
    if dtype not in hw.tflops:
        raise SimConfigError(f"{hw_name} has no {dtype} compute for precision {precision!r}")
    kv_dtype = _kv_dtype(kv_dtype)
    if kv_dtype in mdl.kv_bytes_per_token:
        kv_bytes = float(mdl.kv_bytes_per_token[kv_dtype])
    else:  # scale the 16-bit figure by element size
        base = mdl.kv_bytes_per_token.get("bf16") or mdl.kv_bytes_per_token.get("fp16")
        if base is None:
            raise SimConfigError(f"{model_name} gives no KV bytes per token for {kv_dtype}")
        kv_bytes = base * {"fp8": 0.5, "int8": 0.5, "fp4": 0.28125}.get(kv_dtype, 1.0)
    for name, value in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep), ("instances", instances)):
        if value < 1:
            raise SimConfigError(f"{name} must be at least 1, got {value}")
    if attention_dp and tp % dp:
        raise SimConfigError(f"with attention_dp, tp ({tp}) must be divisible by dp ({dp})")
    if per_rank_limits is None:
        per_rank_limits = engine in PER_RANK_ENGINES
    rank_scale = dp if attention_dp and per_rank_limits else 1
    if graph_max_tokens > 0:
        graph_max_seqs = graph_max_tokens // (1 + spec_draft_tokens)
    pool_bytes, pool_page = _engine_pool(engine, mdl, spec_draft_tokens > 0)
    default_seqs, default_tokens = (
        default_limits(engine, hw.memory_gb, hw_name, offline)
        or (tuning.max_num_seqs, tuning.max_num_batched_tokens))
    context = min(max_model_len or mdl.max_context, mdl.max_context)
    if chunked_prefill is None:
        chunked_prefill = not unchunked_prefill(engine, release(engine_version), mdl.attention)
    whole = engine == "vllm" and not chunked_prefill
    if whole:  # V0 without chunked prefill: a step holds whole prompts up to the context
        default_seqs = V0_MAX_NUM_SEQS
        default_tokens = max(context, V0_MIN_BATCHED_TOKENS)
    step_budget = max_num_batched_tokens or default_tokens
    rank_tokens = step_budget if rank_scale > 1 else 0  # the engine's own, per rank
    sglang_dp = engine == "sglang" and attention_dp and dp > 1 and rank_scale == 1
    if sglang_dp:
        rank_tokens = sglang_rank_chunk(release(engine_version), dp, step_budget,
                                        chunked_prefill)
    cfg = cls(
        model=model_name, hardware=hw_name, precision=precision, kv_dtype=kv_dtype,
        served_model_name=served_model_name or mdl.hf_id,
        peak_flops=hw.tflops[dtype] * 1e12, hbm_bw=hw.hbm_tbps * 1e12,
        memory_bytes=hw.memory_gb * GIB * USABLE_MEMORY, scale_up_bw=hw.scale_up_gbps * GB,
        scale_up_domain=hw.scale_up_domain,
        total_params=mdl.total_params_b * 1e9, active_params=mdl.active_params_b * 1e9,
        layers=mdl.layers, hidden_size=mdl.hidden_size, attention=mdl.attention,
        kv_heads=mdl.kv_heads, moe_experts=mdl.moe_experts,
        moe_active_experts=mdl.moe_active_experts, bytes_per_param=bytes_per_param,
        kv_bytes_per_token=kv_bytes, max_model_len=context,
        tp=tp, pp=pp, dp=dp, ep=ep, attention_dp=attention_dp,
        # the engines' own defaults count a rank's sequences under attention DP
        max_num_seqs=(max_num_seqs * rank_scale if max_num_seqs
                      else default_seqs * (dp if attention_dp else 1)),
        max_num_batched_tokens=step_budget * rank_scale, rank_tokens=rank_tokens,
        rank_prefill_only=sglang_dp,
        memory_fraction=memory_fraction or tuning.memory_fraction,
        block_size=block_size or pool_page or tuning.block_size, prefix_caching=prefix_caching,
        spec_draft_tokens=spec_draft_tokens,
        spec_acceptance=(tuning.default_acceptance_rate if spec_acceptance is None
                         else spec_acceptance) if spec_draft_tokens else 0.0,
        stream_interval=max(1, stream_interval), recv_interval=max(1, recv_interval),
        overlap_intake=overlap_intake, graph_max_seqs=graph_max_seqs,
        prefill_graphs=prefill_graphs, prefill_graph_max_tokens=max(0, prefill_graph_max_tokens),
        attention_cp=max(1, attention_cp), instances=instances,
        reserve_to_completion=(engine == "trtllm" if reserve_to_completion is None
                               else reserve_to_completion),
        prefill_alone=whole or (engine == "sglang" and not mixed_chunk
                                and (not attention_dp or spec_draft_tokens > 0)),
        whole_prompts=whole,
        router_policy=canonical_policy(router_policy), tuning=tuning,
        vendor=hw.vendor, engine=engine, engine_version=engine_version or "", matmul_dtype=dtype,
        moe_a2a=moe_a2a, rocm_aiter=rocm_aiter, spec_v2=spec_v2, dp_sync=dp_sync,
        attention_flops=1e12 * (hw.tflops.get("bf16") or hw.tflops.get("fp16") or hw.tflops[dtype]),
        attention_heads=mdl.attention_heads, head_dim=mdl.head_dim or 0,
        vocab_size=mdl.vocab_size or 0, tied_embeddings=mdl.tied_embeddings,
        fp8_block_scaled=mdl.fp8_block_scaled,
        kv_pool_bytes_per_token=pool_bytes,
        operator_profile=_profile_file(catalog, hw),
        checkpoint_precision=f"{mixed.experts} experts, {mixed.rest} rest" if mixed else "",
        non_expert_bytes_per_param=rest_bytes if mixed else 0.0,
        reserved_bytes=engine_reserve(engine, tp),
    )
    if kv_free_fraction is not None:
        # KV gets this share of what the weights and the profiled activations leave: the
        # same as a whole-HBM fraction of (weights + reserve + share × the rest) / HBM
        weights, hbm, held = cfg.weight_bytes_per_gpu, cfg.memory_bytes, cfg.reserved_bytes
        cfg = replace(cfg, memory_fraction=(
            weights + held + kv_free_fraction * (hbm - weights - held)) / hbm)
    cfg.check()
    return cfg


def lookup(catalog: Catalog | None, kind: str, value: Any) -> tuple[Any, str]:
    """A hardware or model entry given by catalog name (or as the schema object) and its name."""
    if not isinstance(value, str):
        return value, getattr(value, "display_name", kind)
    table = None if catalog is None else (catalog.hardware if kind == "hardware" else catalog.models)
    if table is None:
        raise SimConfigError(f"{kind} {value!r} given by name but no catalog loaded")
    name = resolve(table, value, kind)
    if name is None:
        where = "matrix/hardware.yaml" if kind == "hardware" else "matrix/models.yaml"
        raise SimConfigError(f"unknown {kind} {value!r} (see {where}: {', '.join(table)})")
    return table[name], name


def _profile_file(catalog: Catalog | None, hw: Hardware) -> str:
    """The file of the operator profile a hardware entry names ("" for none)."""
    if not hw.profile:
        return ""
    try:
        return str(profile_path(hw.profile, catalog.root if catalog else None))
    except ProfileError as exc:
        raise SimConfigError(str(exc)) from None


def _engine_pool(engine: str, mdl: Model, speculative: bool) -> tuple[float, int | None]:
    """Where the engine lays DeepSeek V4's hybrid attention out in KV pools of its own
    (docs/sim.md, "KV cache"): its bytes per token of capacity and its page size; (0, None)
    where one latent entry a token holds."""
    arch = default_tables().architectures
    pool = arch.compressed_kv_pools.get(engine)  # type: ignore[call-overload]
    if pool is None or mdl.attention != "mla-compressed":
        return 0.0, None
    csa_layers = round(arch.csa_share * mdl.layers)
    return pool.bytes_per_token(mdl.layers, csa_layers, arch.csa_ratio, speculative), pool.page_size


def _kv_dtype(value: str | None) -> str:
    if value in (None, "", "auto"):
        return "bf16"  # engines keep KV in the activation dtype unless told otherwise
    value = value.lower()
    if value.startswith("fp8"):
        return "fp8"
    if value in ("bf16", "bfloat16"):
        return "bf16"
    if value in ("fp16", "float16", "half"):
        return "fp16"
    if value in ("fp4", "nvfp4", "int8"):
        return "fp4" if value != "int8" else "int8"
    raise SimConfigError(f"unknown KV cache dtype {value!r}")

