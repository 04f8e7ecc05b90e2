"""Defaults of the simulated engine, in one place.

Hardware and model facts come from the catalog, and per-operator efficiencies of known hardware
from data/efficiency.yaml (sourced, per hardware, dtype and operator). What lives here is the
roofline used for hardware those tables do not cover, and what engines do when a recipe says
nothing. docs/sim.md explains each value. Override any of them with ``--tuning NAME=VALUE`` (or
``Tuning(...)`` in Python).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Tuning:
    # --- roofline for hardware data/efficiency.yaml does not cover (share of the datasheet peak)
    compute_efficiency: float = 0.55
    """matmul FLOP/s actually reached by prefill-sized GEMMs (MFU)"""
    memory_efficiency: float = 0.80
    """HBM bandwidth actually reached when streaming weights and KV"""
    moe_memory_efficiency: float = 0.55
    """bandwidth reached by grouped expert GEMMs at small per-expert batches"""

    # --- fixed costs
    step_overhead_s: float = 0.0008
    """per engine step (uncovered hardware): sampling and output handling"""
    per_layer_overhead_s: float = 0.000008
    """per kernel (uncovered hardware): launch gap and tail of one operator"""
    per_seq_overhead_s: float = 0.000004
    """per sequence per step (uncovered hardware): sampling"""

    # --- communication
    inter_node_gbps: float = 50.0
    """per-GPU scale-out bandwidth (one 400 Gb/s NIC per GPU), GB/s"""
    kv_transfer_latency_s: float = 0.002
    """fixed cost of one prefill→decode KV handoff (connection, metadata, completion notice)"""

    # --- speculative decoding
    default_acceptance_rate: float = 0.7
    """per-draft-token acceptance when neither the recipe nor data/efficiency.yaml gives one"""

    # --- engine defaults when the recipe's args say nothing
    memory_fraction: float = 0.90
    """share of HBM the engine may use for weights + KV (vLLM gpu-memory-utilization)"""
    max_num_seqs: int = 256
    """for an engine whose own default (engine_defaults.py) is not known"""
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
