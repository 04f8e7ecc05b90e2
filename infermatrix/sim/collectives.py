"""Collectives of one layer on the busiest GPU, from the group sizes and the fabric: tensor
parallelism's two all-reduces of the hidden state; the experts' dispatch and combine where
tokens cross GPUs (attention DP, an all-to-all backend, EP beyond the TP group); and pipeline
parallelism's hand-off between stages. Each is ``latency(group) + bytes / (link × bw_eff)``,
``latency(group) = latency_us + per_hop_us × log2(group)``, the fabric chosen by hardware and
group (NVLink/NVSwitch, NVL72, xGMI, HCCS, InfiniBand beyond the scale-up domain)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .tables import US, EfficiencyTables, Fabric, fabric_name

if TYPE_CHECKING:
    from .config import SimConfig

ACT_BYTES = 2.0  # bf16 activations
DISPATCH_BYTES = 1.0  # fp8 expert dispatch (DeepEP, TensorRT-LLM low-precision dispatch)


@dataclass(frozen=True)
class Collectives:
    fixed: float  # seconds a layer, whatever the batch
    s_tok: float  # seconds a layer per token on the busiest rank
    pp_fixed: float  # seconds a step of the hand-offs between pipeline stages
    pp_s_tok: float  # and per token


def latency(fab: Fabric, group: int) -> float:
    return (fab.latency_us + fab.per_hop_us * math.log2(max(group, 2))) * US


def link_bw(cfg: SimConfig, eff: float, group: int) -> float:
    raw = cfg.scale_up_bw if group <= cfg.scale_up_domain else cfg.tuning.inter_node_gbps * 1e9
    return raw * eff


def layer_collectives(cfg: SimConfig, t: EfficiencyTables, tpa: int, G: int, dpa: int,
                      k: int) -> Collectives:
    """The collectives of ``cfg``'s layer: ``tpa`` the attention TP group, ``G`` the GPUs a
    pipeline stage spans, ``dpa`` the attention-DP ranks, ``k`` the experts a token routes to
    (0 without routed experts)."""
    vendor, h = cfg.vendor, cfg.hidden_size
    fixed = s_tok = 0.0
    if tpa > 1:
        fab = t.fabrics[fabric_name(vendor, cfg.scale_up_domain, tpa)]
        link = link_bw(cfg, fab.bw_eff, tpa)
        fixed += 2 * latency(fab, tpa)
        s_tok += 2 * 2 * (tpa - 1) / tpa * h * ACT_BYTES / link
    # Under attention TP every GPU holds every token, so experts split by EP compute their
    # share and the TP all-reduce above sums it, as for tensor-split experts (SGLang's
    # default --moe-a2a-backend none, vLLM's EP without DP, TensorRT-LLM's TEP). Tokens
    # cross GPUs only under attention DP, with an all-to-all backend (DeepEP, Mooncake), or
    # where the TP group does not span the instance.
    dispatch = dpa > 1 or cfg.moe_a2a or (cfg.ep > 1 and tpa < G)
    if k and G > 1 and dispatch:
        fab = t.fabrics[fabric_name(vendor, cfg.scale_up_domain, G)]
        link = link_bw(cfg, fab.bw_eff, G)
        share = (G - 1) / G
        fixed += 2 * latency(fab, G)
        if cfg.ep > 1:  # dispatch k copies in fp8, combine in bf16
            per_tok = k * h * (DISPATCH_BYTES + ACT_BYTES) * share
        else:  # attention DP with tensor-split experts: all-gather, then reduce-scatter
            per_tok = 2 * h * ACT_BYTES * share * dpa
        s_tok += per_tok / link / (1 if dpa > 1 else tpa)
    pp_fixed = pp_s_tok = 0.0
    if cfg.pp > 1:
        fab = t.fabrics[fabric_name(vendor, cfg.scale_up_domain, cfg.gpus)]
        pp_fixed = (cfg.pp - 1) * latency(fab, 2)
        pp_s_tok = (cfg.pp - 1) * h * ACT_BYTES / link_bw(cfg, fab.bw_eff, cfg.gpus)
    return Collectives(fixed, s_tok, pp_fixed, pp_s_tok)
