"""Host costs of SGLang's speculative steps and of its attention-DP steps (docs/sim.md,
"SGLang speculative and DP-attention steps"); facts and figures in data/efficiency.yaml
(the engine table's ``spec_source``).

- SGLang with EAGLE/MTP runs without the overlap scheduler unless spec v2 is on
  (``SGLANG_ENABLE_SPEC_V2``), every step of the server (prefills too): host work adds to the
  GPU's time instead of hiding behind it. A speculative step's host work (scheduling, then
  preparing the draft, verify and draft-extend passes in turn) is larger than a plain step's
  (``spec_step_us``).
- Under attention DP every step first exchanges the ranks' batch metadata (``dp_sync_us``),
  unless ``SGLANG_SCHEDULER_SKIP_ALL_GATHER`` skips it: host work like the rest, hidden where
  the step overlaps.

Engines whose table row gives neither keep their plain step's host cost and overlap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .tables import US

if TYPE_CHECKING:
    from .config import SimConfig
    from .tables import EngineOverhead


@dataclass(frozen=True)
class HostCosts:
    """Fixed host seconds of a plain and of a speculative step, and whether each overlaps
    the GPU."""

    plain_s: float
    plain_overlap: bool
    spec_s: float
    spec_overlap: bool


def host_costs(eng: EngineOverhead, cfg: SimConfig) -> HostCosts:
    """The engine's fixed host work per step for this deployment."""
    sync = eng.dp_sync_us * US if cfg.kv_ranks > 1 and cfg.dp_sync else 0.0
    plain = eng.step_us * US + sync
    spec_step = eng.spec_step_us if eng.spec_step_us is not None else eng.step_us
    spec_overlap = eng.overlap if eng.spec_overlap is None else eng.spec_overlap
    if cfg.spec_v2:  # SGLang's spec v2 worker: speculative steps under the overlap scheduler
        spec_overlap = eng.overlap
    # the overlap scheduler is a server-wide switch: off for a speculative server's every step
    # (its prefills too), not only for those that verify drafts
    plain_overlap = spec_overlap if cfg.spec_draft_tokens else eng.overlap
    return HostCosts(plain, plain_overlap, spec_step * US + sync, spec_overlap)
