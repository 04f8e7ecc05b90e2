"""Progress of a capacity search, whose number of levels is not known up front: after each
level, the levels left are estimated from what the verdicts so far bracket, tier by tier,
and the bar's total follows (so its ETA does).

For a tier with a passing level ``lo`` and a failing ``hi``: the bisection steps left to
close the bracket to the resolution; with no failure yet: one more doubling, expected to
fail, then the bisection of [lo, 2·lo].
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..progress import Progress
from .tiers import SloTier, judge

Measure = Callable[[int], Awaitable[dict[str, Any]]]


def levels_left(levels: dict[int, dict[str, Any]], tiers: Sequence[SloTier], max_error_rate: float,
                *, start: int, max_concurrency: int, resolution: int,
                resolution_pct: float) -> int:
    left = 0
    for tier in tiers:
        lo, hi = 0, None
        for c in sorted(levels):
            if not judge(levels[c], tier, max_error_rate).passed:
                hi = c
                break
            lo = c
        if lo >= max_concurrency:
            continue
        tol = max(resolution, lo * resolution_pct / 100.0)
        if hi is None:
            lo = max(lo, start)
            left += 1 + max(0, math.ceil(math.log2(max(lo / tol, 1.0))))
        elif hi - lo > tol:
            left += math.ceil(math.log2((hi - lo) / tol))
    return left


class Tracked:
    """``measure`` with a progress bar over the levels measured and those expected."""

    def __init__(self, measure: Measure, tiers: Sequence[SloTier], max_error_rate: float,
                 progress: Progress, **bounds: Any) -> None:
        self.measure, self.tiers, self.max_error_rate = measure, tiers, max_error_rate
        self.progress, self.bounds = progress, bounds
        self.levels: dict[int, dict[str, Any]] = {}

    async def __call__(self, agents: int) -> dict[str, Any]:
        self.progress.note(f"{agents} agents")
        level = await self.measure(agents)
        self.levels[agents] = level
        left = levels_left(self.levels, self.tiers, self.max_error_rate, **self.bounds)
        self.progress.set_total(len(self.levels) + left)
        self.progress.advance()
        return level
