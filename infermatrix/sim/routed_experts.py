"""A MoE layer's routed experts on the busiest GPU: the gate, two grouped expert GEMMs
(gate_up and down) over the experts the batch touches, the activation between them and the
combine after them (operators.StepModel times the rest of the layer).

Each touched expert's t tokens are padded to the kernel's row tile: a fixed tile pads
``tokens_half`` rows an expert (compute efficiency t / (t + tokens_half)); a kernel that picks
its tile from t (the row's ``tile_rows``: Marlin, triton_kernels' matmul_ogs) pads half of t,
at most ``tokens_half``, and fills at least its smallest tile. The GEMMs take the larger of that
compute and the touched experts' weights, at least the floor, plus a measured kernel's fixed
time; under expert parallelism the busiest rank carries the routing skew plus the statistical
spread of a finite batch.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .collectives import ACT_BYTES
from .tables import US, OperatorRow

if TYPE_CHECKING:
    from .config import SimConfig


class RoutedExperts:
    """Seconds one MoE layer's routed experts take on the busiest GPU, and their weights' read."""

    def __init__(self, cfg: SimConfig, moe: OperatorRow, gate_floor_us: float,
                 elem_memory_eff: float, experts: int, p_expert: float, gpus: int):
        k, h, bw = cfg.moe_active_experts, cfg.hidden_size, cfg.hbm_bw
        self.experts, self.k = experts, k
        # spread over all GPUs of the instance (EP or TP-split)
        self.s_assign = 2 * p_expert / gpus / (cfg.peak_flops * moe.compute_eff)  # a (token, expert)
        self.w_expert = p_expert * cfg.bytes_per_param / gpus / (bw * moe.memory_eff)  # a touched one
        self.half = moe.tokens_half or 48.0
        self.tile = moe.tile_rows
        self.fixed = 2 * moe.fixed_us * US  # gate_up and down, beyond their roofline
        self.floor = (2 * moe.floor_us + gate_floor_us) * US  # two grouped GEMMs + gate
        # the activation between the two grouped GEMMs: gate and up read, product written
        self.act_s_assign = 3 * p_expert / (3 * h) * ACT_BYTES / gpus / (bw * elem_memory_eff)
        # the combine: each (token, expert) pair's down projection is written at the full
        # hidden width and read back to sum a token's k pairs (vLLM's and SGLang's fused
        # MoE: intermediate_cache3 of (tokens, k, hidden), then moe_sum). TP-split experts
        # give every GPU every pair (partial sums); EP gives each its own pairs.
        self.act_s_assign += 2 * h * ACT_BYTES / max(cfg.ep, 1) / (bw * elem_memory_eff)
        self.skew = moe.imbalance if cfg.ep > 1 else 1.0
        self.ep_ranks = cfg.ep
        self.ep_log2 = 2.0 * math.log(max(cfg.ep, 1))
        self.miss = 1.0 - k / experts

    def touched(self, tokens: float) -> float:
        """Experts a batch of ``tokens`` routes to, expected: 1 − (1 − k/E)^tokens of them."""
        return self.experts * (1.0 - self.miss ** tokens)

    def weights_s(self, tokens: float) -> float:
        """Seconds to read the experts a batch of ``tokens`` touches."""
        return self.touched(tokens) * self.w_expert

    def layer_s(self, tokens: float) -> float:
        assign = tokens * self.k
        skew = self.skew
        if self.ep_ranks > 1:  # a finite batch spreads unevenly over the EP ranks
            mean = assign / self.ep_ranks
            skew *= 1.0 + math.sqrt(self.ep_log2 / (mean if mean > 1.0 else 1.0))
        touched = self.touched(tokens)
        pad = self.half * touched
        if self.tile is not None and touched > 0.0:
            t = assign / touched
            pad = touched * max(self.tile - t, min(0.5 * t, self.half))
        compute = self.s_assign * skew * (assign + pad)
        memory = touched * self.w_expert
        return max(compute, memory, self.floor) + self.fixed + self.act_s_assign * skew * assign
