"""Capacity search: the highest concurrency that still passes a tier.

Coarse doubling from ``start`` until a level fails (or ``max_concurrency`` passes), then
bisection between the last pass and the first fail until they are ``resolution`` apart.
A time budget stops the search where it is: a tier not yet bounded is reported unbounded.
Assumes passing is monotone in concurrency (more agents never make things better). Levels are
measured once and shared by every tier, so searching SLO20 and SLO60 together costs little more
than the stricter one alone."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from time import monotonic
from typing import Any

from .tiers import SloTier, Verdict, judge

Measure = Callable[[int], Awaitable[dict[str, Any]]]


@dataclass
class TierResult:
    tier: SloTier
    passing_concurrency: int  # 0: not even ``start`` passed
    first_failing: int | None  # None: the search hit max_concurrency still passing
    verdicts: dict[int, Verdict] = field(default_factory=dict)

    @property
    def bounded(self) -> bool:
        return self.first_failing is not None


@dataclass
class SearchResult:
    levels: dict[int, dict[str, Any]]  # concurrency → level summary, in the order measured
    tiers: list[TierResult]


class CapacitySearch:
    def __init__(
        self,
        measure: Measure,
        tiers: Sequence[SloTier],
        *,
        start: int = 1,
        max_concurrency: int = 4096,
        resolution: int = 1,
        max_error_rate: float = 0.05,
        time_budget_s: float | None = None,
    ) -> None:
        if start < 1 or max_concurrency < start or resolution < 1:
            raise ValueError("need 1 <= start <= max_concurrency and resolution >= 1")
        self.measure, self.tiers = measure, list(tiers)
        self.start, self.max, self.resolution = start, max_concurrency, resolution
        self.max_error_rate = max_error_rate
        self.levels: dict[int, dict[str, Any]] = {}
        self.budget_s = time_budget_s
        self.t0 = monotonic()

    def spent(self) -> bool:
        """The time budget is used up: no new level is measured (the tier stays unbounded)."""
        return self.budget_s is not None and monotonic() - self.t0 >= self.budget_s

    async def level(self, c: int) -> dict[str, Any]:
        if c not in self.levels:
            self.levels[c] = await self.measure(c)
        return self.levels[c]

    async def passes(self, c: int, tier: SloTier, verdicts: dict[int, Verdict]) -> bool | None:
        """None: not measured, the time budget is spent."""
        if c not in self.levels and self.spent():
            return None
        v = judge(await self.level(c), tier, self.max_error_rate)
        verdicts[c] = v
        return v.passed

    async def tier(self, tier: SloTier) -> TierResult:
        verdicts: dict[int, Verdict] = {}
        lo, hi, c = 0, None, self.start
        while hi is None:  # coarse: double until a level fails
            ok = await self.passes(c, tier, verdicts)
            if ok is None:
                return TierResult(tier, lo, None, verdicts)
            if ok:
                lo = c
                if c >= self.max:
                    break
                c = min(2 * c, self.max)
            else:
                hi = c
        while hi is not None and hi - lo > self.resolution:  # fine: bisect
            mid = (lo + hi) // 2
            if mid <= 0:
                break
            ok = await self.passes(mid, tier, verdicts)
            if ok is None:
                break  # bounded by the last fail, not bisected to the resolution
            if ok:
                lo = mid
            else:
                hi = mid
        return TierResult(tier, lo, hi, verdicts)

    async def run(self) -> SearchResult:
        # the strictest tier first: its levels are lower, and the looser tier reuses them
        order = sorted(self.tiers, key=lambda t: (-t.min_output_speed, t.max_ttft_s))
        done = {t.name: await self.tier(t) for t in order}
        return SearchResult(self.levels, [done[t.name] for t in self.tiers])
