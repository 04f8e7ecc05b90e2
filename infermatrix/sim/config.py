"""SimConfig: the pure numbers one simulated engine instance runs on, and what follows from them.

A config describes one instance (tp × pp × dp GPUs running one scheduler); ``instances`` says how
many identical copies sit behind the router. A disaggregated deployment is the decode pool's
config with ``prefill`` set to the prefill pool's config and a KV transfer bandwidth. Its
constructors derive the numbers from catalog facts: ``from_parts`` (config_parts.py) from a
hardware entry, a model and engine knobs, ``from_recipe`` (config_recipe.py) from a recipe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalog.schema import routed_expert_params
from . import config_parts, config_recipe
from .engine_memory import GB
from .errors import SimConfigError
from .prefill_graphs import graphed_prefill_tokens
from .tables import default_tables
from .tuning import DEFAULT_TUNING, Tuning


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
    # the token embedding and LM head tables (vocab x hidden each, one table where tied):
    # part of active_params, but a lookup and one GEMM per sampled token, not per-token GEMMs
    # in every layer (operators.py); 0: unknown (their parameters stay in the layers)
    vocab_size: int = 0
    tied_embeddings: bool = False
    # the FP8 checkpoint is block-scaled (catalog Model.fp8_block_scaled): engines run its
    # GEMMs through block-scaled kernels, which the tables may date ("fp8_block" rows)
    fp8_block_scaled: bool = False
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
        experts, whole = self.expert_params, self.whole_params
        rest = (self.total_params - experts - whole) / self.dense_shards + whole / self.pp
        target = self.bytes_per_param * experts / self.expert_shards + self.rest_bytes_per_param * rest
        # an MTP/EAGLE draft is one more decoder layer of the target's make (DeepSeek's
        # num_nextn_predict_layers 1), loaded inside the same static memory share
        return target * (1 + 1 / self.layers) if self.spec_draft_tokens else target

    @property
    def whole_params(self) -> float:
        """Parameters every GPU of the attention TP group holds whole: MLA's down-projections
        (hidden -> query latent, hidden -> KV latent + rope), which vLLM, SGLang and
        TensorRT-LLM replicate, splitting only the heads' projections."""
        if not self.attention.startswith("mla"):
            return 0.0
        arch = default_tables().architectures
        return self.layers * self.hidden_size * (arch.mla_q_lora + arch.mla_latent + arch.mla_rope)

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

    # the functions take the class they build, so that they need not import this module back
    from_parts = classmethod(config_parts.from_parts)
    from_recipe = classmethod(config_recipe.from_recipe)
