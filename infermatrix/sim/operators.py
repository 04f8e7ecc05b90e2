"""Per-operator step times: what one engine step costs, operator by operator.

A step runs every layer once over the batch. Each operator of a layer takes
``max(compute / (peak × compute_eff), bytes / (HBM × memory_eff), kernels × floor)`` on the
busiest GPU, where the efficiencies and kernel floors come from
infermatrix/sim/data/efficiency.yaml by hardware, dtype and operator:

- attention projections (QKV + output; MLA's low-rank projections), sharded over attention TP;
- attention itself, by architecture: GQA/MHA reads the whole context; MLA decodes absorbed (the
  latent is read once, every head attends over it: compute-heavy) and prefills un-absorbed;
  DeepSeek sparse attention reads the full context only through its small indexer keys and
  attends to the top-k positions; sliding-window layers attend to the window;
- MoE: gate, then grouped expert GEMMs whose compute is padded to the kernel's row tile and
  whose busiest rank carries the routing skew plus the statistical spread of a finite batch;
  only the experts the batch touches are read (routed_experts.py);
- dense MLP (dense layers, shared experts);
- norms and other element-wise kernels;
- collectives from the group size and the fabric (two all-reduces per layer for tensor
  parallelism, dispatch + combine for expert parallelism, gather + scatter for attention DP
  with tensor-split experts), partly hidden behind compute where the engine overlaps them;
- the LM head once a step, over the tokens it samples (the embedding is a lookup: no GEMM);
- sampling, MTP/EAGLE draft passes, and the engine's host work per step (scheduling, input
  preparation, output processing) as a function of the batch, overlapped with the GPU where the
  engine has an overlap scheduler.

Under attention data parallelism each rank attends to its own sequences: a decode step waits
for the rank with the most of them (ceil(seqs / dp) when the scheduler balances them; the
expected maximum of a random placement when requests reach ranks at random, as SGLang's PD
decode does); a step that prefills waits for the rank the scheduler gave the most new tokens,
whose own tokens, sequences, KV and attention pairs the scheduler hands over (``busiest``).

Decode steps run as captured CUDA/NPU graphs up to the recipe's largest captured batch per rank;
a larger batch (or an engine with graphs disabled) runs eagerly, and then the host must launch
every operator of every layer itself: the step takes at least ``layers × eager dispatch`` (the
``eager_dispatch`` row of the tables). Under a random placement the share of steps that fit the
graph is the probability that no rank exceeds it. A step that prefills replays piecewise
graphs only where the engine captures them for this deployment and up to its largest captured
size (prefill_graphs.py); otherwise it takes the same eager floor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .collectives import ACT_BYTES, layer_collectives
from .flashmla_sparse import head_padding
from .lm_head import LM_HEAD_DTYPE, LMHead
from .prefill_graphs import graphed_prefill_tokens
from .profile_gemms import ProfileGemms
from .profiles import fit_file
from .rank_placement import expected_max_load
from .routed_experts import RoutedExperts
from .spec_cost import host_costs
from .tables import US, EfficiencyTables, OperatorRow, default_tables

if TYPE_CHECKING:
    from .batch_shape import BatchShape
    from .config import SimConfig

# a number, or an array of them (one per step of a decode phase), and min/max for either
Num = float | np.ndarray
Pick = Callable[[Num, float], Num]

# A prefill attention score's softmax exponential, in head-dimension units of its matmul time:
# FlashAttention-3 on an H100 (Shah et al. 2024, arXiv 2407.08608, forward BF16, 16K) runs
# 497 TFLOP/s at head dim 64 and 648 at 128, i.e. a score takes (hd + 56) units (H100: 989
# TFLOP/s of matmul against 3.9 TFLOP/s of exponentials, the paper's section 3.1)
SOFTMAX_HEAD_DIM = 56.0


class StepModel:
    """Step time of one engine instance for a batch's aggregates."""

    def __init__(self, cfg: SimConfig, tables: EfficiencyTables | None = None):
        t = tables or default_tables()
        hw, vendor, dtype = cfg.hardware, cfg.vendor, cfg.matmul_dtype
        tun = cfg.tuning

        # ways tensor parallelism splits the routed experts (1 under expert parallelism): an
        # engine may pick its MoE kernel by it (data/efficiency.yaml, min_moe_tp)
        moe_tp = cfg.tp if cfg.ep <= 1 else 1

        def row(op: str, dtype: str = "*") -> OperatorRow:
            return t.operator(op, hw, vendor, dtype, tun, cfg.engine, cfg.engine_version,
                              cfg.rocm_aiter, moe_tp)

        gemm = row("gemm", dtype)
        # a block-scaled FP8 checkpoint on a build whose block-scaled GEMM kernels the tables
        # measured ("fp8_block" rows): their compute share caps the dense GEMMs'
        block = row("gemm", "fp8_block") if dtype == "fp8" and cfg.fp8_block_scaled else None
        block_eff = block.compute_eff if block is not None and block.dtype == "fp8_block" else None
        # 4-bit experts on BF16 tensor cores (Hopper, MI300X) run kernels that dequantise the
        # weights in their main loop (Marlin, Triton's MXFP4 matmul): their own grouped-GEMM
        # rows ("w4a16"), the dtype-wide rows where none is given
        moe = row("grouped_gemm", "w4a16" if dtype == "bf16" and cfg.bytes_per_param < 1.0
                  else dtype)
        att_d = row("attention_decode")
        att_p = row("attention_prefill")
        elem = row("elementwise")
        samp = row("sampling")
        eager = row("eager_dispatch")
        arch = t.architectures
        eng = t.engines.get(cfg.engine) or t.engines["vllm"]  # type: ignore[call-overload]
        self.cfg = cfg
        L = cfg.layers
        h = cfg.hidden_size
        heads = cfg.attention_heads or max(1, h // 128)
        # the model's own head dimension where it differs from hidden / heads: Qwen3 projects
        # 4,096 hidden onto 64 heads of 128 (config.json head_dim), gpt-oss 2,880 onto 64 of 64
        head_dim = cfg.head_dim or h / heads
        # bytes per parameter of all but the routed experts (which run at the run's precision,
        # routed_experts.py): the checkpoint's own where it quantises only the experts (gpt-oss:
        # BF16 attention)
        b = cfg.rest_bytes_per_param
        peak = cfg.peak_flops
        attn_peak = cfg.attention_flops or peak
        bw = cfg.hbm_bw
        self.layers = L
        self.dpa = cfg.kv_ranks  # attention-DP ranks (1 without attention DP)
        self.random_dispatch = cfg.rank_dispatch == "random" and self.dpa > 1
        self.rank_max_seqs = cfg.rank_max_seqs  # requests placed beyond it wait, not in a batch
        self.graph_max = cfg.graph_max_seqs
        self.eager_layer_s = eager.floor_us * US
        tpa = cfg.tp // cfg.dp if cfg.attention_dp else cfg.tp
        # prefill context parallelism: each of cp ranks takes a slice of the prompt's tokens
        # (attention over its queries, projections and dense parts over its tokens); attention
        # is split over what is left of the TP group
        self.cp = max(1, min(cfg.attention_cp, tpa))
        tpa //= self.cp
        # pipeline parallelism: a layer runs on its stage's GPUs, and a step is one
        # micro-batch's trip through every stage (see step_time)
        self.pp = cfg.pp
        G = cfg.gpus // cfg.pp

        # ---- parameters per layer, split into attention, routed experts and the dense rest
        mla = cfg.attention.startswith("mla")
        # MLA's down-projections run whole on every GPU of the attention TP group (engines
        # replicate them: ReplicatedLinear / fused_qkv_a_proj), only the heads' are split
        p_attn_whole = cfg.whole_params / L
        if mla:
            p_attn = (p_attn_whole + arch.mla_q_lora * heads * arch.mla_qk_head
                      + arch.mla_latent * heads * (arch.mla_qk_head - arch.mla_rope + arch.mla_v_head)
                      + heads * arch.mla_v_head * h)
        else:
            p_attn = 2 * h * heads * head_dim + 2 * h * cfg.kv_heads * head_dim  # q, o; k, v
        self.experts = cfg.moe_experts if cfg.moe_experts > cfg.moe_active_experts else 0
        if mla and self.experts:  # a DeepSeek layer launches several times a dense one's kernels
            heavy = row("eager_dispatch_mla_moe")
            self.eager_layer_s = max(self.eager_layer_s, heavy.floor_us * US)
        self.k = cfg.moe_active_experts
        p_expert = cfg.expert_params / self.experts / L if self.experts else 0.0
        # the embedding and LM head tables (vocab x hidden, one of them when tied) are in the
        # active count but in no layer: taken out here, the LM head timed on its own below
        p_tables = cfg.vocab_size * h * (1 if cfg.tied_embeddings else 2)
        p_layers = cfg.active_params - p_tables
        p_dense = max(p_layers / L - p_attn - self.k * p_expert, 0.02 * p_layers / L)

        # ---- dense GEMMs per layer on one GPU: seconds per token (compute), fixed (memory)
        gemm_flops = peak * min(gemm.compute_eff, block_eff or 1.0)
        gemm_bw = bw * gemm.memory_eff
        p_attn_gpu = (p_attn - p_attn_whole) / tpa + p_attn_whole
        self.attn_proj_s_tok = 2 * p_attn_gpu / gemm_flops
        self.attn_proj_w = p_attn_gpu * b / gemm_bw
        self.attn_proj_max = max(self.attn_proj_w, (5 if mla else 3) * gemm.floor_us * US)
        # dense MLP / shared experts: split over the attention TP group (replicated per DP rank)
        self.dense_s_tok = 2 * p_dense / tpa / gemm_flops
        self.dense_w = p_dense * b / tpa / gemm_bw
        self.dense_max = max(self.dense_w, 2 * gemm.floor_us * US)
        # a measured profile (profiles.py) times the GEMMs shape by shape instead
        self.fit = fit_file(cfg.operator_profile) if cfg.operator_profile else None
        # The profile's GEMMs were timed in short bursts, at boost clock; a serving step's
        # compute-bound GEMMs run at the clock the board's power limit sustains (the table's
        # sustained_clock share; the tables' own compute shares are end-to-end, sustained).
        self.clock = row("sustained_clock").compute_eff if self.fit is not None else 1.0
        self.profile_gemms = (ProfileGemms(cfg, self.fit, arch, mla, heads, head_dim, tpa, p_dense,
                                           self.clock, block_eff)
                              if self.fit is not None else None)
        self.lm_head = LMHead(cfg, row("gemm", LM_HEAD_DTYPE), tpa, self.fit)

        # ---- routed experts (routed_experts.py)
        self.routed = (RoutedExperts(cfg, moe, gemm.floor_us, elem.memory_eff, self.experts,
                                     p_expert, G) if self.experts else None)
        # ---- attention
        kv_layer = cfg.kv_bytes_per_token / L
        kv_split = 1 if mla else min(tpa, cfg.kv_heads)
        self.sparse = cfg.attention in ("mla-sparse", "mla-compressed")
        self.sliding = cfg.attention == "gqa-sliding"
        self.topk = arch.sparse_topk
        self.window = arch.sliding_window
        self.window_share = arch.sliding_share
        # positions the indexer scores per context token: all of them (DSA), or under DeepSeek
        # V4's hybrid attention one compressed entry per csa_ratio tokens in its CSA layers
        index_share = (arch.csa_share / arch.csa_ratio if cfg.attention == "mla-compressed"
                       else 1.0)
        kv_index = arch.indexer_dim * (1.0 if cfg.kv_dtype != "bf16" else 2.0) if self.sparse else 0.0
        kv_index = index_share * kv_index
        kv_index = min(kv_index, 0.5 * kv_layer)
        abw_d = bw * att_d.memory_eff
        self.kv_main_s = (kv_layer - kv_index) / kv_split / abw_d  # per attended position
        self.kv_index_s = kv_index / kv_split / abw_d  # per context position (sparse indexer)
        dec_flops = attn_peak * att_d.compute_eff
        pre_flops = attn_peak * att_p.compute_eff
        if mla:  # absorbed decode: every head scores the latent + rope, then mixes the latent
            per_pos_decode = 2 * heads * (2 * arch.mla_latent + arch.mla_rope)
            # DeepSeek sparse attention runs MLA in its MQA (absorbed) mode in prefill too, each
            # head scoring the whole latent (DeepSeek-V3.2 report: DSA is implemented on the MQA
            # mode of MLA so that one selected latent entry serves every head; FlashMLA's
            # sparse prefill kernels): 3.4x the un-absorbed FLOPs of a pair. (DeepSeek V4's
            # compressed attention keeps the un-absorbed cost here: which positions it attends
            # in prefill is modelled coarsely, and its calibration rows were fitted so.)
            per_pair_prefill = (per_pos_decode if cfg.attention == "mla-sparse"
                                else 2 * heads * (arch.mla_qk_head + arch.mla_v_head))
        else:
            per_pos_decode = per_pair_prefill = 4 * heads * head_dim
            # a prefill score costs its head's two matmuls (4 x head_dim FLOPs) plus one softmax
            # exponential, whose time does not shrink with the head: the efficiencies are those
            # of 128-wide heads, so narrower heads run fewer FLOPs a second (SOFTMAX_HEAD_DIM)
            per_pair_prefill *= (head_dim + SOFTMAX_HEAD_DIM) / head_dim * 128 / (128 + SOFTMAX_HEAD_DIM)
        # vLLM's FlashMLA sparse kernels compute zero-padded heads beside a rank's own
        # (flashmla_sparse.py): DeepSeek V3.2 at TP8 on Hopper scores 64 heads for its 16
        pad_d, pad_p = (head_padding(cfg.engine, cfg.attention, cfg.vendor, cfg.hardware,
                                     cfg.kv_dtype, heads / tpa, prefill)
                        for prefill in (False, True))
        self.dec_s_pos = pad_d * per_pos_decode / tpa / dec_flops  # per (query token, position)
        self.pre_s_pair = pad_p * per_pair_prefill / tpa / pre_flops
        self.index_s_pos = (index_share * 2 * arch.indexer_heads * arch.indexer_dim / dec_flops
                            if self.sparse else 0.0)
        self.kv_read_s_pre = kv_layer / kv_split / (bw * att_p.memory_eff)
        # kernels per layer: GQA one; MLA split-KV + combine; DSA adds indexer and top-k
        att_kernels = 4 if self.sparse else 2 if mla else 1
        self.att_floor_d = att_d.floor_us * US * att_kernels
        self.att_floor_p = att_p.floor_us * US * att_kernels
        # measured profile: a kernel's ramp and tail add to its time (no floor), plus the
        # critical path of the longest sequence's keys (opfit.py). GQA/MHA only: the profile's
        # MLA figures are torch stand-ins, not FlashMLA, so MLA stays on the tables
        self.att_fixed_d = self.att_fixed_p = self.att_pos_d = self.att_pos_p = 0.0
        if self.fit is not None and not mla:
            fd, fp = self.fit.attention_decode, self.fit.attention_prefill
            self.att_floor_d = self.att_floor_p = 0.0
            self.att_fixed_d, self.att_fixed_p = fd.t0_s * att_kernels, fp.t0_s * att_kernels
            self.att_pos_d, self.att_pos_p = fd.per_pos_s, fp.per_token_s
            self.kv_main_s *= att_d.memory_eff / fd.mem_eff
            self.kv_index_s *= att_d.memory_eff / fd.mem_eff
            # ... and a prefill's attention saturates the tensor cores as a prefill GEMM does:
            # the profile timed it in bursts, a serving step runs it at the sustained clock
            self.pre_s_pair *= att_p.compute_eff / (fp.comp_eff * self.clock)

        # ---- element-wise kernels (norms, rotary, activation, residuals): per token the fused
        # add + RMSNorm pairs read and write the hidden state and the residual (8 x hidden), and
        # the gated activation reads gate and up and writes their product (3 x the MLP width on
        # this GPU): the bytes of the measured H100 element-wise figures (../shared/measurements,
        # "elementwise": (8 h + 3 i) x 2 bytes a token), which engines fuse into fewer kernels
        # but cannot shrink. A routed expert's activation counts per (token, expert) assignment.
        self.elem_bytes_tok = (8 * h + 3 * p_dense / (3 * h) / tpa) * ACT_BYTES
        self.elem_s_tok = self.elem_bytes_tok / (bw * elem.memory_eff)
        self.elem_floor = elem.kernels * elem.floor_us * US

        # ---- collectives per layer (collectives.py), and pipeline hand-offs per step
        comm = layer_collectives(cfg, t, tpa, G, self.dpa, self.k if self.experts else 0)
        self.comm_fixed, self.comm_s_tok = comm.fixed, comm.s_tok  # s_tok: busiest rank's tokens
        self.pp_fixed, self.pp_s_tok = comm.pp_fixed, comm.pp_s_tok
        self.comm_visible = 1.0 - eng.comm_overlap

        # ---- per step: sampling, draft passes, host
        self.sample_fixed = samp.floor_us * US
        self.sample_s_seq = samp.per_seq_us * US
        self.host_s_seq = eng.per_seq_us * US
        self.host_s_prefill = eng.per_prefill_token_us * US
        # fixed host work and overlap of plain and speculative steps (spec_cost.py: SGLang's
        # EAGLE/MTP steps without the overlap scheduler, attention-DP ranks' metadata sync)
        costs = host_costs(eng, cfg)
        self.host_fixed, self.overlap = costs.plain_s, costs.plain_overlap
        self.spec_host_fixed, self.spec_overlap = costs.spec_s, costs.spec_overlap
        # steps that prefill replay piecewise graphs up to this many tokens; larger ones, or
        # all where the engine turns them off, launch layer by layer (prefill_graphs.py)
        self.prefill_graph_tokens = graphed_prefill_tokens(eng.prefill_graphs, cfg)

    def head_s(self, sampled: float, sustained: bool = True) -> float:
        """The LM head over ``sampled`` tokens on one GPU (0 without a vocabulary size);
        ``sustained`` as a serving step runs it (see clock)."""
        return self.lm_head.seconds(sampled, self.clock if sustained else 1.0)

    def _gemms(self, m: float, sustained: bool = False) -> tuple[float, float]:
        """(attention projections, dense MLP) of one layer at ``m`` tokens on one GPU: as the
        profile measured them, or ``sustained`` as a serving step runs them (see clock)."""
        if self.profile_gemms is None:
            a, d = self.attn_proj_s_tok * m, self.dense_s_tok * m
            return (a if a > self.attn_proj_max else self.attn_proj_max,
                    d if d > self.dense_max else self.dense_max)
        return self.profile_gemms.seconds(m, sustained)

    # ------------------------------------------------------------------ pieces

    def expert_weights_s(self, tokens: float) -> float:
        """Seconds to read the routed experts a batch of ``tokens`` touches, per layer."""
        return self.routed.weights_s(tokens) if self.routed is not None else 0.0

    def weights_s(self, tokens: float) -> float:
        """Time to stream the weights one step touches (every layer, and the LM head once):
        the memory floor."""
        return (self.layers * (self.attn_proj_w + self.dense_w + self.expert_weights_s(tokens))
                + self.lm_head.stream_s)

    def _attention_layer(self, tokens_r: float, seqs_r: float, kv_r: float, pairs_r: float,
                         decode: bool) -> float:
        if decode:
            return self._attention_decode(tokens_r, seqs_r, kv_r, min, max)
        pairs = pairs_r
        index = 0.0
        if self.sparse:  # the indexer scores every (query, position) pair
            index = pairs * self.index_s_pos
            pairs = min(pairs, tokens_r * self.topk)
        elif self.sliding:
            pairs = self.window_share * pairs + (1 - self.window_share) * min(pairs, tokens_r * self.window)
        compute = pairs * self.pre_s_pair + index
        return (max(compute, kv_r * self.kv_read_s_pre, self.att_floor_p) + self.att_fixed_p
                + self.att_pos_p * kv_r / seqs_r)

    def _attention_decode(self, tokens_r: float, seqs_r: float, kv_r: Num, minimum: Pick,
                          maximum: Pick) -> Num:
        """Attention of a decode step; ``kv_r`` a number (with min and max) or an array of
        them, one per step (with np.minimum and np.maximum): the same arithmetic either way."""
        ctx = kv_r / seqs_r
        if self.sparse:
            attended = minimum(ctx, self.topk)
        elif self.sliding:
            attended = self.window_share * ctx + (1 - self.window_share) * minimum(ctx, self.window)
        else:
            attended = ctx
        memory = seqs_r * (attended * self.kv_main_s + ctx * self.kv_index_s)
        compute = tokens_r * (attended * self.dec_s_pos + ctx * self.index_s_pos)
        return (maximum(maximum(memory, compute), self.att_floor_d) + self.att_fixed_d
                + self.att_pos_d * attended)

    # ------------------------------------------------------------------ one step

    def _micro_batch(self, seqs: int) -> tuple[int, float, int]:
        """Pipeline parallelism keeps up to pp micro-batches in flight, one a stage (vLLM's
        virtual engines, TensorRT-LLM's in-flight pipeline): every sequence advances a token
        each time its micro-batch has passed every stage, while the others fill the other
        stages. So a step of the whole batch takes the trip of its largest micro-batch:
        (its sequences, their share of the batch, micro-batches). Without PP, or with one
        sequence (a prompt's chunks pass the stages in turn), the batch itself."""
        m = min(self.pp, seqs)
        if m <= 1:
            return seqs, 1.0, 1
        largest = -(-seqs // m)
        return largest, largest / seqs, m

    def step_time(self, tokens: int, seqs: int, kv_read: int, attn_pairs: float,
                  draft_tokens: int = 0, busiest: BatchShape | None = None) -> float:
        """One step of the batch's aggregates; ``busiest``: under attention DP, those of the
        rank the scheduler gave the most new tokens, which time the attention side."""
        if seqs == 0:
            return 0.0
        micro = 1
        if self.pp > 1:
            busiest = None  # (a micro-batch's ranks are not tracked: the balanced share)
            seqs, share, micro = self._micro_batch(seqs)
            tokens, kv_read, attn_pairs, draft_tokens = (  # type: ignore[assignment]
                tokens * share, kv_read * share, attn_pairs * share, draft_tokens * share)
        work = tokens + draft_tokens
        decode = tokens <= seqs
        eager = not self._graphed(seqs) if decode else tokens > self.prefill_graph_tokens
        if busiest is not None and self.dpa > 1:
            return self._rank_step(tokens, seqs, work, draft_tokens, busiest, eager)
        rank = self._busiest_rank(seqs) if decode or self.cp == 1 else 1.0 / self.cp
        w_r = work * rank
        attention = self._attention_layer(w_r, seqs * rank, kv_read * rank, attn_pairs * rank,
                                          decode)
        return self._step(tokens, seqs, work, w_r, attention, draft_tokens, eager, micro,
                          seqs_r=seqs * rank)

    def _rank_step(self, tokens: int, seqs: int, work: int, draft_tokens: int,
                   busiest: BatchShape, eager: bool) -> float:
        """A step under attention DP timed by its busiest rank's own aggregates on the
        attention side (each rank's scheduler fills its own batch: one rank may prefill a
        whole chunk while the others decode a token each). The experts still take every
        rank's tokens, and the gather/scatter keeps the balanced share (as before)."""
        b = busiest
        split = 1.0 / self.cp if b.tokens > b.seqs else 1.0  # prefill context parallelism
        w_r = (b.tokens + b.draft_tokens) * split
        attention = self._attention_layer(w_r, b.seqs * split, b.kv_read * split,
                                          b.attn_pairs * split, b.tokens <= b.seqs)
        gathered = work * self._busiest_rank(seqs)
        return self._step(tokens, seqs, work, w_r, attention, draft_tokens, eager,
                          w_comm=gathered, seqs_r=b.seqs)

    def decode_steps(self, seqs: int, kv_reads: np.ndarray, draft_tokens: int = 0) -> np.ndarray:
        """``step_time(seqs, seqs, kv, kv, draft_tokens)`` for every ``kv`` of ``kv_reads`` at
        once: the consecutive steps of a decode phase, where only the context grows. Equal
        to the scalar calls (the same operations in the same order, in float64)."""
        micro = 1
        if self.pp > 1:
            seqs, share, micro = self._micro_batch(seqs)
            kv_reads, draft_tokens = kv_reads * share, draft_tokens * share  # type: ignore[assignment]
        work = seqs + draft_tokens
        rank = self._busiest_rank(seqs)
        w_r = work * rank
        attention = self._attention_decode(w_r, seqs * rank, kv_reads * rank, np.minimum,
                                           np.maximum)
        return self._step(seqs, seqs, work, w_r, attention, draft_tokens, not self._graphed(seqs),
                          micro, seqs_r=seqs * rank)

    def _busiest_rank(self, seqs: int) -> float:
        """The share of the batch on the busiest attention-DP rank: ceil(seqs / dp) of them,
        or under a random placement the expected maximum load, which never passes the rank's
        own batch limit."""
        dpa = self.dpa
        if dpa <= 1:
            return 1.0
        if self.random_dispatch:
            return expected_max_load(seqs, dpa, self.rank_max_seqs) / seqs
        return -(-seqs // dpa) / seqs

    def _graphed(self, seqs: int) -> bool:
        """Whether a decode step of ``seqs`` sequences replays a captured graph: the busiest
        rank's batch must fit the largest captured size (the ranks step together; under a
        random placement, its expected maximum, capped at the rank's batch limit)."""
        if self.graph_max < 0:
            return True
        return seqs * self._busiest_rank(seqs) <= self.graph_max + 1e-9

    def _kernels(self, w_r: float, work: float, attention: Num, sustained: bool = True) -> Num:
        """One layer's kernels on the busiest GPU: GEMMs, element-wise, attention, experts."""
        a, d = self._gemms(w_r, sustained)
        e = self.elem_s_tok * w_r
        layer = a + d + (e if e > self.elem_floor else self.elem_floor) + attention
        return layer + self.routed.layer_s(work) if self.routed is not None else layer

    def decode_kernels_s(self, seqs: int, context: int) -> float:
        """A graphed decode step's GPU kernels alone (every layer, the LM head over its
        sequences, sampling), without collectives or host work: what a measured whole-step
        figure of one GPU (opfit, the profile's ``decode_step``) bounds from above."""
        att = self._attention_decode(seqs, seqs, context + seqs, min, max)
        return (self.layers * self._kernels(seqs, seqs, att, sustained=False)  # type: ignore[operator]
                + self.head_s(seqs, sustained=False) + self.sample_fixed + self.sample_s_seq * seqs)

    def _step(self, tokens: int, seqs: int, work: int, w_r: float, attention: Num,
              draft_tokens: int, eager: bool, micro: int = 1, w_comm: float = -1.0,
              seqs_r: float = 0.0) -> Num:
        """A step from its attention time (a number, or an array of them, one per step):
        every other operator depends only on the batch's token and sequence counts. ``eager``:
        without graphs the host launches every layer's operators, at least as long as the GPU
        takes (launches and kernels overlap). With ``micro`` pipeline micro-batches the counts
        are one micro-batch's and the host schedules each of them. ``w_comm``: the busiest
        rank's tokens the collectives move, where they differ from ``w_r``. ``seqs_r``: the
        busiest rank's sequences, each of which samples a token (and its drafts are verified)
        through the LM head, once a step on the last stage: not part of ``layer``."""
        if w_comm < 0:
            w_comm = w_r
        layer = (self._kernels(w_r, work, attention)
                 + (self.comm_fixed + self.comm_s_tok * w_comm) * self.comm_visible)
        drafts_r = draft_tokens / seqs * seqs_r
        gpu = (self.layers * layer + self.pp_fixed + self.pp_s_tok * w_comm
               + self.head_s(seqs_r + drafts_r) + self.sample_fixed + self.sample_s_seq * seqs)
        if draft_tokens:
            # MTP/EAGLE: one draft pass per draft token, each about one layer over the batch
            # and the LM head over its sequences (DeepSeek's MTP modules share the main head)
            gpu = gpu + draft_tokens / seqs * (layer + self.head_s(seqs_r) + self.sample_fixed)
        if eager:
            launch = (self.layers + draft_tokens / seqs) * self.eager_layer_s
            gpu = np.maximum(gpu, launch) if isinstance(gpu, np.ndarray) else max(gpu, launch)
        if draft_tokens:
            host, overlap = self.spec_host_fixed, self.spec_overlap
        else:
            host, overlap = self.host_fixed, self.overlap
        host += self.host_s_seq * seqs
        if tokens > seqs:
            host += self.host_s_prefill * (tokens - seqs)
        host *= micro
        if not overlap:
            return gpu + host
        if isinstance(gpu, np.ndarray):
            return np.maximum(gpu, host)
        return gpu if gpu > host else host
