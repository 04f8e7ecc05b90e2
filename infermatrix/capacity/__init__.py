"""Agentic capacity: the highest number of concurrent closed-loop agents a deployment serves
while every SLO tier holds (AA-AgentPerf methodology), normalised per GPU, kW and $/hour.

    from infermatrix.capacity import CapacitySettings, Target, find_capacity_sync
    doc = find_capacity_sync(Target(BenchConfig(base_url=...)), source, [SLO20, SLO60],
                             Footprint(gpus=8), CapacitySettings(duration_s=60))

Uses the client (sessions), the planner's measurement and the simulator (virtual time); it
launches nothing: launch/ runs a capacity job through its one loop (launch/loop.py).
"""

from .normalise import Footprint, normalise
from .run import CapacitySettings, Target, find_capacity, find_capacity_sync
from .search import CapacitySearch, SearchResult, TierResult
from .tiers import DEFAULT_TIERS, SLO20, SLO60, SloTier, judge

__all__ = [
    "DEFAULT_TIERS",
    "SLO20",
    "SLO60",
    "CapacitySearch",
    "CapacitySettings",
    "Footprint",
    "SearchResult",
    "SloTier",
    "Target",
    "TierResult",
    "find_capacity",
    "find_capacity_sync",
    "judge",
    "normalise",
]
