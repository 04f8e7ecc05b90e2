"""Every efficiency, overhead and default of the simulated engine, in one place.

Hardware and model facts come from the catalog; what lives here is how far real engines fall
short of the roofline and what they do when a recipe says nothing. docs/sim.md explains each
value. Override any of them with ``--tuning NAME=VALUE`` (or ``Tuning(...)`` in Python).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Tuning:
    # --- roofline efficiencies (share of the datasheet peak a real engine reaches)
    compute_efficiency: float = 0.55
    """matmul FLOP/s actually reached by prefill-sized GEMMs (MFU)"""
    memory_efficiency: float = 0.80
    """HBM bandwidth actually reached when streaming weights and KV"""
    moe_memory_efficiency: float = 0.55
    """bandwidth reached by grouped expert GEMMs at small per-expert batches"""

    # --- fixed costs
    step_overhead_s: float = 0.0008
    """per engine step: scheduling, input preparation, launching the (graphed) forward pass"""
    per_layer_overhead_s: float = 0.000008
    """per layer per step: kernel launch gaps and small ops that never reach the roofline"""
    per_seq_overhead_s: float = 0.000004
    """per sequence per step: sampling, detokenisation, output processing"""

    # --- communication
    allreduce_latency_s: float = 0.000006
    """one tensor-parallel all-reduce of a small message"""
    all_to_all_latency_s: float = 0.000012
    """one expert-parallel dispatch or combine"""
    activation_bytes: float = 2.0
    """bytes per activation element sent over the fabric (bf16)"""
    inter_node_gbps: float = 50.0
    """per-GPU scale-out bandwidth (one 400 Gb/s NIC per GPU), GB/s"""
    kv_transfer_latency_s: float = 0.002
    """fixed cost of one prefill→decode KV handoff (connection, metadata, completion notice)"""

    # --- speculative decoding
    default_acceptance_rate: float = 0.7
    """per-draft-token acceptance when the recipe gives none"""
    draft_cost_fraction: float = 0.06
    """one draft token costs this share of a target forward pass (MTP/EAGLE heads are small)"""

    # --- engine defaults when the recipe's args say nothing
    memory_fraction: float = 0.90
    """share of HBM the engine may use for weights + KV (vLLM gpu-memory-utilization)"""
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    """tokens per KV block; also the granularity of prefix-cache matches"""

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def with_overrides(self, overrides: dict[str, str]) -> Tuning:
        """Apply NAME=VALUE strings (from the command line); unknown names raise ValueError."""
        known = {f.name: f.type for f in fields(self)}
        values: dict[str, float | int] = {}
        for name, raw in overrides.items():
            if name not in known:
                raise ValueError(f"unknown tuning knob {name!r} (known: {', '.join(known)})")
            cast = int if known[name] in ("int", int) else float
            try:
                values[name] = cast(raw)
            except ValueError:
                raise ValueError(f"tuning knob {name!r} needs a number, got {raw!r}") from None
        return replace(self, **values)


DEFAULT_TUNING = Tuning()
