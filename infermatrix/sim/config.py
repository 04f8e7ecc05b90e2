"""SimConfig: the pure numbers one simulated engine instance runs on, derived from catalog facts.

A config describes one instance (tp × pp × dp GPUs running one scheduler); ``instances`` says how
many identical copies sit behind the router. A disaggregated deployment is the decode pool's
config with ``prefill`` set to the prefill pool's config and a KV transfer bandwidth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..catalog.loader import Catalog
from ..catalog.schema import PRECISIONS, Hardware, Model, Pool, routed_expert_params
from .coverage import warn_if_unknown
from .engine_args import engine_knobs, rocm_aiter, sglang_env
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
from .prefill_graphs import graphed_prefill_tokens
from .profiles import ProfileError, profile_path
from .router import canonical_policy
from .tables import default_tables, fabric_name, release
from .tuning import DEFAULT_TUNING, Tuning

# engines whose max batch size / token budget count per attention-DP rank (TensorRT-LLM
# max_batch_size and max_num_tokens; vLLM runs one engine core per DP rank)
PER_RANK_ENGINES = ("trtllm", "vllm")


@dataclass(frozen=True)
class SimConfig:
    # identity (labels only; every number below is what the model uses)
    model: str
    hardware: str
    precision: str
    kv_dtype: str
    served_model_name: str
    # per GPU
    peak_flops: float  # FLOP/s at the precision's matmul dtype, dense
    hbm_bw: float  # bytes/s
    memory_bytes: float
    scale_up_bw: float  # bytes/s, one direction
    scale_up_domain: int
    # model
    total_params: float
    active_params: float
    layers: int
    hidden_size: int
    attention: str
    kv_heads: int
    moe_experts: int
    moe_active_experts: int
    bytes_per_param: float  # the routed experts', and every weight's unless the next is set
    kv_bytes_per_token: float  # one copy of the cache, all layers
    max_model_len: int
    # parallelism of one instance
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    attention_dp: bool = False
    moe_a2a: bool = False  # an all-to-all backend dispatches tokens to the experts (DeepEP)
    # engine knobs
    max_num_seqs: int = DEFAULT_TUNING.max_num_seqs
    max_num_batched_tokens: int = DEFAULT_TUNING.max_num_batched_tokens
    # under attention DP, tokens one rank's scheduler takes a step at most (0: no per-rank
    # budget): TensorRT-LLM's max_num_tokens and vLLM's max_num_batched_tokens per rank, every
    # token counted; SGLang's share of chunked_prefill_size (engine_defaults.sglang_rank_chunk)
    # for its prefill alone (``rank_prefill_only``: its decode batches do not draw on it)
    rank_tokens: int = 0
    rank_prefill_only: bool = False
    memory_fraction: float = DEFAULT_TUNING.memory_fraction
    reserved_bytes: float = 0.0
    """per GPU, held by the engine beside weights and KV within its memory fraction (vLLM's and
    TensorRT-LLM's activation peak and non-torch memory; SGLang's non-torch memory)"""
    block_size: int = DEFAULT_TUNING.block_size
    prefix_caching: bool = True
    spec_draft_tokens: int = 0
    spec_acceptance: float = 0.0
    stream_interval: int = 1  # tokens per streamed chunk (TensorRT-LLM stream_interval)
    # SGLang --scheduler-recv-interval: new requests are taken in only every N decode steps
    # (and after any step that prefills); 1: every step (recv.py)
    recv_interval: int = 1
    # an overlap scheduler (SGLang, TensorRT-LLM) polls for new requests between launching step
    # n + 1 and processing step n, so a request arriving during step n joins step n + 2
    # (engine.lagged_intake); SGLang's --disable-overlap-schedule, TensorRT-LLM's
    # disable_overlap_scheduler: false
    overlap_intake: bool = True
    # decode CUDA/NPU graphs: the largest per-rank batch (sequences) captured; -1: the engine's
    # default covers every batch, 0: graphs disabled (every decode step runs eagerly)
    graph_max_seqs: int = -1
    # steps that prefill: the deployment turns piecewise graphs on (True) or off (False) itself,
    # or leaves it to the engine (None; prefill_graphs.py), and the largest step they capture
    # (SGLang --piecewise-cuda-graph-max-tokens; 0: the engine's default)
    prefill_graphs: bool | None = None
    prefill_graph_max_tokens: int = 0
    # TensorRT-LLM's default capacity scheduler (GUARANTEED_NO_EVICT) admits a request only when
    # the KV blocks of its whole prompt + max_tokens are free besides what the running ones still
    # need: a started request is never paused. vLLM and SGLang admit on the blocks needed now.
    reserve_to_completion: bool = False
    # SGLang runs a step that can prefill before any decode, and without --enable-mixed-chunk
    # the decoders sit it out (scheduler "Run prefill first if possible"); vLLM and
    # TensorRT-LLM put prefill chunks and decodes in one step
    prefill_alone: bool = False
    # a prompt is prefilled in one step, never in chunks (vLLM V0 without chunked prefill:
    # engine_defaults.unchunked_prefill); with prefill_alone, the V0 scheduler's order
    whole_prompts: bool = False
    attention_cp: int = 1  # prefill context parallelism: ranks a prompt's attention is split over
    # how requests reach attention-DP ranks: "balanced" (the scheduler's placement) or "random"
    # (SGLang PD decode: rank = bootstrap_room % dp, a random room per request)
    rank_dispatch: str = "balanced"
    # deployment
    instances: int = 1
    router_policy: str = "round_robin"
    prefill: SimConfig | None = None
    kv_transfer_bw: float = 0.0  # bytes/s for one prefill→decode handoff
    tuning: Tuning = field(default=DEFAULT_TUNING)
    # what the per-operator model looks up in infermatrix/sim/data/efficiency.yaml
    vendor: str = "nvidia"
    engine: str = "vllm"
    engine_version: str = ""  # as a recipe or a source gives it ("" unknown)
    matmul_dtype: str = "bf16"
    # AMD: the engine runs AITER's kernels (ROCm/aiter: fused MoE, block-scaled GEMMs, MLA), as
    # SGLang's ROCm images do (SGLANG_USE_AITER=1) and vLLM with VLLM_ROCM_USE_AITER=1; False:
    # its generic Triton kernels (AITER switched off, or a build from before it was integrated)
    rocm_aiter: bool = True
    # SGLang's environment: speculative steps under the overlap scheduler (SGLANG_ENABLE_SPEC_V2)
    # and the per-step metadata all-gather of attention-DP ranks (off with
    # SGLANG_SCHEDULER_SKIP_ALL_GATHER); see spec_cost.py
    spec_v2: bool = False
    dp_sync: bool = True
    attention_flops: float = 0.0  # FLOP/s of the 16-bit attention kernels (0: peak_flops)
    attention_heads: int = 0  # 0: hidden_size / 128
    head_dim: int = 0  # 0: hidden_size / attention_heads
    # bytes the engine's KV pool reserves per token of capacity, where its layout differs from
    # one kv_bytes_per_token entry (SGLang's DeepSeek V4 pools); 0: kv_bytes_per_token
    kv_pool_bytes_per_token: float = 0.0
    # every engine step takes this many times as long (an experiment's knob, sim/variation.py)
    step_scale: float = 1.0
    # the measured operator profile this hardware's GEMMs and attention are timed by (a file;
    # profiles.py, opfit.py); "" : the efficiency tables' rows
    operator_profile: str = ""
    # a checkpoint that stores its routed experts and the rest (attention, router, dense and
    # shared MLPs, embeddings, LM head) at different precisions (gpt-oss: MXFP4 experts, BF16
    # rest; the model catalog's mixed_precision): what it stores ("mxfp4 experts, bf16 rest")
    # and the rest's bytes per parameter; "" / 0: every weight at bytes_per_param
    checkpoint_precision: str = ""
    non_expert_bytes_per_param: float = 0.0

    # ------------------------------------------------------------------ derived numbers

    @property
    def gpus(self) -> int:
        """GPUs of one instance."""
        return self.tp * self.pp * (1 if self.attention_dp else self.dp)

    @property
    def total_gpus(self) -> int:
        own = self.gpus * self.instances
        return own + (self.prefill.total_gpus if self.prefill else 0)

    @property
    def attention_tp(self) -> int:
        """GPUs one attention-DP rank (or the whole instance, without attention DP) splits
        attention over."""
        return self.tp // self.dp if self.attention_dp else self.tp

    @property
    def expert_shards(self) -> int:
        """Ways the routed experts are split: every GPU of the instance (EP, or TP-split
        experts under attention DP); plain DP replicas without EP each hold a full copy."""
        return self.tp * self.pp * (self.dp if self.ep > 1 and not self.attention_dp else 1)

    @property
    def dense_shards(self) -> int:
        """Ways everything but the routed experts (attention, dense and shared MLPs,
        embeddings, LM head) is split: the attention TP group × pp. Under attention DP each
        rank holds its own copy, as each DP replica does."""
        return self.attention_tp * self.pp

    @property
    def rest_bytes_per_param(self) -> float:
        """Bytes per parameter of every weight but the routed experts."""
        return self.non_expert_bytes_per_param or self.bytes_per_param

    @property
    def weight_bytes_per_gpu(self) -> float:
        """Weights on the fullest GPU: routed experts over the expert shards, the rest over
        the attention TP group (replicated per attention-DP rank), each at its own bytes per
        parameter, plus a speculative draft layer."""
        experts = self.expert_params
        target = (self.bytes_per_param * experts / self.expert_shards
                  + self.rest_bytes_per_param * (self.total_params - experts) / self.dense_shards)
        # an MTP/EAGLE draft is one more decoder layer of the target's make (DeepSeek's
        # num_nextn_predict_layers 1), loaded inside the same static memory share
        return target * (1 + 1 / self.layers) if self.spec_draft_tokens else target

    @property
    def expert_params(self) -> float:
        """Parameters in routed experts (total − active = (E − k) × expert size)."""
        return routed_expert_params(self.total_params, self.active_params, self.moe_experts,
                                    self.moe_active_experts)

    @property
    def kv_shards(self) -> int:
        """Ways one instance splits its KV cache. MLA keeps one latent per token, replicated
        across the attention TP group; GQA splits KV heads (replicating beyond kv_heads)."""
        per_group = 1 if self.attention.startswith("mla") else min(self.attention_tp, self.kv_heads)
        return self.pp * self.dp * per_group

    @property
    def kv_bytes_per_gpu(self) -> float:
        return self.memory_bytes * self.memory_fraction - self.weight_bytes_per_gpu - self.reserved_bytes

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV one instance can hold: (HBM × fraction − weights) / KV bytes per token
        (the engine's pool bytes where its layout differs from the model's latent)."""
        per_token = self.kv_pool_bytes_per_token or self.kv_bytes_per_token
        return max(0, int(self.kv_bytes_per_gpu * self.kv_shards / per_token))

    @property
    def num_blocks(self) -> int:
        return self.kv_capacity_tokens // self.block_size

    @property
    def kv_ranks(self) -> int:
        """KV pools of one instance: one per attention-DP rank, which holds its own sequences'
        KV (a sequence never spans ranks)."""
        return self.dp if self.attention_dp else 1

    @property
    def rank_max_seqs(self) -> int:
        """Sequences one attention-DP rank runs at most: its share of the batch limit (SGLang:
        max-running-requests // dp per DP worker); requests beyond it wait for the rank."""
        return -(-self.max_num_seqs // self.kv_ranks)

    @property
    def step_tokens(self) -> int:
        """The token budget of one instance step: max_num_batched_tokens, or with per-rank
        prefill budgets every rank's prefill plus a token for each running sequence (SGLang's
        decode batches do not draw on the prefill budget)."""
        if self.rank_prefill_only:
            return self.rank_tokens * self.kv_ranks + self.max_num_seqs
        return self.max_num_batched_tokens

    @property
    def rank_capacity_tokens(self) -> int:
        """Tokens of KV one rank holds: the longest context one instance can serve."""
        return self.num_blocks // self.kv_ranks * self.block_size

    @property
    def fabric_bw(self) -> float:
        """Bandwidth of the collectives inside one instance."""
        if self.gpus <= self.scale_up_domain:
            return self.scale_up_bw
        return self.tuning.inter_node_gbps * GB

    @property
    def disaggregated(self) -> bool:
        return self.prefill is not None

    def check(self) -> None:
        if self.num_blocks < 1:
            raise SimConfigError(
                f"{self.model} at {self.precision} needs {self.weight_bytes_per_gpu / GB:.0f} GB of "
                f"weights per GPU; {self.hardware} leaves no room for KV cache "
                f"({self.memory_bytes / GB:.0f} GB × {self.memory_fraction})")
        if self.prefill is not None:
            self.prefill.check()

    def _prefill_graph_tokens(self) -> int:
        engine = default_tables().engines.get(self.engine)  # type: ignore[call-overload]
        tokens = graphed_prefill_tokens(engine.prefill_graphs if engine else None, self)
        return -1 if math.isinf(tokens) else int(tokens)

    def summary(self) -> dict[str, Any]:
        """What the server logs at start and /v1/models reports: the numbers that matter."""
        out: dict[str, Any] = {
            "model": self.model, "hardware": self.hardware, "precision": self.precision,
            # the engine's build picks the tables' dated rows (data/efficiency.yaml `since`)
            "engine": self.engine, "engine_version": self.engine_version or "unstated",
            "kv_dtype": self.kv_dtype, "tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep,
            "attention_dp": self.attention_dp, "moe_a2a": self.moe_a2a, "instances": self.instances,
            "gpus": self.total_gpus,
            "weight_gb_per_gpu": round(self.weight_bytes_per_gpu / GB, 2),
            "kv_capacity_tokens": self.kv_capacity_tokens, "kv_ranks": self.kv_ranks,
            "max_num_seqs": self.max_num_seqs, "max_num_batched_tokens": self.max_num_batched_tokens,
            "prefix_caching": self.prefix_caching, "spec_draft_tokens": self.spec_draft_tokens,
            "spec_acceptance": self.spec_acceptance, "max_model_len": self.max_model_len,
            "memory_fraction": round(self.memory_fraction, 4), "stream_interval": self.stream_interval,
            "recv_interval": self.recv_interval, "overlap_intake": self.overlap_intake,
            "router_policy": self.router_policy, "graph_max_seqs": self.graph_max_seqs,
            "attention_cp": self.attention_cp, "rank_dispatch": self.rank_dispatch,
            "reserve_to_completion": self.reserve_to_completion, "prefill_alone": self.prefill_alone,
            "whole_prompts": self.whole_prompts,
            # the largest step that prefills and replays graphs (-1: every one, 0: none)
            "prefill_graph_tokens": self._prefill_graph_tokens(),
        }
        if self.rank_tokens:  # the token budget of one attention-DP rank's step
            out["rank_tokens"] = self.rank_tokens
        if self.vendor == "amd":
            out["rocm_aiter"] = self.rocm_aiter
        if self.engine == "sglang" and self.spec_draft_tokens:  # overlap scheduler or not
            out["spec_v2"] = self.spec_v2
        if self.engine == "sglang" and self.attention_dp:  # the ranks' per-step metadata sync
            out["dp_sync"] = self.dp_sync
        if self.checkpoint_precision:  # experts and the rest stored at different precisions
            out["checkpoint_precision"] = self.checkpoint_precision
        if self.operator_profile:  # GEMMs and attention timed by a measured profile
            out["operator_profile"] = Path(self.operator_profile).stem
        if self.prefill is not None:
            out["prefill"] = self.prefill.summary()
            out["kv_transfer_gbps"] = round(self.kv_transfer_bw / GB, 1)
        return out

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_parts(
        cls, catalog: Catalog | None, hardware: str | Hardware, model: str | Model, precision: str, *,
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
    ) -> SimConfig:
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
        hw, hw_name = _lookup(catalog, "hardware", hardware)
        warn_if_unknown(hw_name, hw.vendor)  # generic defaults stand in: say so
        mdl, model_name = _lookup(catalog, "model", model)
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

    @classmethod
    def from_recipe(cls, catalog: Catalog, recipe_id: str, *, served_model_name: str | None = None,
                    params: dict[str, Any] | None = None, tuning: Tuning = DEFAULT_TUNING,
                    dataset: str | None = None, **overrides: Any) -> SimConfig:
        """The deployment a recipe describes.

        ``params`` binds ``${NAME}`` placeholders left to run time (``{"CONC": 64}`` for a recipe
        with ``max-num-seqs: ${CONC}``); an arg whose placeholder stays unbound is ignored.
        ``overrides`` are from_parts knobs (max_num_seqs=…, kv_dtype=…) applied to every pool,
        over whatever the recipe says. ``dataset`` (random, chat, agentic, ...) picks the
        speculative acceptance rate from the tables when the recipe gives none."""
        if recipe_id not in catalog.recipes:
            raise SimConfigError(f"unknown recipe {recipe_id!r} (see benchmarks/; e.g. "
                                 f"{next(iter(catalog.recipes), 'none')})")
        recipe = catalog.recipes[recipe_id]
        name = served_model_name or catalog.checkpoint(recipe_id)

        bound = {**recipe.params, **(params or {})}
        vendor = _lookup(catalog, "hardware", recipe.hardware)[0].vendor
        from .variation import step_scale  # the environment's experiment knobs (off: 1.0)

        scale = step_scale(recipe_id)

        def pool_config(pool: Pool) -> SimConfig:
            knobs = engine_knobs(recipe, pool, bound)
            knobs["engine_version"] = recipe.engine.version
            knobs["rocm_aiter"] = rocm_aiter(vendor, recipe.engine.name,
                                             {**recipe.env, **pool.env}, bound)
            knobs.update(sglang_env({**recipe.env, **pool.env}, bound))
            knobs.update({k: v for k, v in overrides.items() if v is not None})
            par = pool.parallel
            spec = pool.spec_decode or recipe.spec_decode
            # the recipe's speculative decoding, unless the overrides say otherwise
            knobs = {
                "spec_draft_tokens": spec.draft_tokens if spec else 0,
                "spec_acceptance": (spec.acceptance_rate if spec.acceptance_rate is not None
                                    else default_tables().acceptance_rate(spec.method, dataset))
                if spec else None,
                **knobs,
            }
            # SGLang's all-to-all MoE backends (DeepEP, Mooncake) put the experts on expert
            # parallelism over the TP group: ep = tp, whether or not --ep is given
            a2a = knobs.pop("a2a_experts", False)
            ep = par.tp if a2a and par.ep == 1 else par.ep
            made = cls.from_parts(
                catalog, recipe.hardware, recipe.model, recipe.precision,
                tp=par.tp, pp=par.pp, dp=par.dp, ep=ep, attention_dp=par.attention_dp, moe_a2a=a2a,
                served_model_name=name, instances=pool.instances,
                router_policy=recipe.router.policy if recipe.router else "round_robin",
                tuning=tuning, engine=recipe.engine.name, **knobs,
            )
            return made if scale == 1.0 else replace(made, step_scale=scale)

        pools = recipe.topology.pools
        if recipe.topology.mode == "aggregated":
            if len(pools) > 1:
                # several 'both' pools: the sim serves them as one pool of the first kind
                total = sum(p.instances for p in pools)
                return replace(pool_config(pools[0]), instances=total)
            return pool_config(pools[0])
        prefill_pool = next(p for p in pools if p.role == "prefill")
        decode_pool = next(p for p in pools if p.role == "decode")
        prefill = pool_config(prefill_pool)
        decode = pool_config(decode_pool)
        # SGLang PD: a request's decode DP rank is its bootstrap room (random) modulo dp
        dispatch = "random" if decode.engine == "sglang" and decode.attention_dp else "balanced"
        # a PD decode server admits requests whose KV arrived: it never prefills
        return replace(decode, prefill=prefill, kv_transfer_bw=_kv_transfer_bw(prefill, decode),
                       rank_dispatch=dispatch, prefill_alone=False)


def _lookup(catalog: Catalog | None, kind: str, value: Any) -> tuple[Any, str]:
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


def _kv_transfer_bw(prefill: SimConfig, decode: SimConfig) -> float:
    """One handoff streams over every GPU pair of the smaller instance, on the fabric that joins
    the two pools: NVLink inside one NVL72 domain, the scale-out NICs otherwise; at the fabric's
    reachable share of its bandwidth (infermatrix/sim/data/efficiency.yaml)."""
    lanes = min(prefill.gpus, decode.gpus)
    span = prefill.total_gpus + decode.gpus * decode.instances
    fabric = fabric_name(decode.vendor, decode.scale_up_domain, span)
    per_lane = decode.tuning.inter_node_gbps * GB if fabric == "infiniband" else decode.scale_up_bw
    return per_lane * lanes * default_tables().fabrics[fabric].bw_eff

