"""Capacity search: the highest concurrency that still passes a tier.

Coarse doubling from ``start`` until a level fails (or ``max_concurrency`` passes), then a
fine search between the last pass and the first fail until they are ``resolution`` agents apart,
or ``resolution_pct`` percent of the passing level (whichever allows more). The fine search
bisects, except that with a relative resolution it first guesses where the tier is crossed
(see ``crossing``) and probes just across that guess, so a good guess closes the bracket in
two levels instead of log2(bracket / resolution).
A time budget stops the search where it is: a tier not yet bounded is reported unbounded.
Assumes passing is monotone in concurrency (more agents never make things better). Levels are
measured once and shared by every tier, and a tier starts from the bracket the levels already
measured give it, so searching SLO20 and SLO60 together costs little more than the stricter one
alone."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from time import monotonic
from typing import Any

from ..catalog.schema import MAX_RESOLUTION_PCT
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
        resolution_pct: float = 0.0,
        max_error_rate: float = 0.05,
        time_budget_s: float | None = None,
    ) -> None:
        if start < 1 or max_concurrency < start or resolution < 1:
            raise ValueError("need 1 <= start <= max_concurrency and resolution >= 1")
        if not 0 <= resolution_pct <= MAX_RESOLUTION_PCT:
            raise ValueError(f"need 0 <= resolution_pct <= {MAX_RESOLUTION_PCT:g}")
        self.measure, self.tiers = measure, list(tiers)
        self.start, self.max, self.resolution = start, max_concurrency, resolution
        self.resolution_pct = resolution_pct
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

    def tolerance(self, lo: int) -> float:
        return max(self.resolution, lo * self.resolution_pct / 100.0)

    def close_enough(self, lo: int, hi: int) -> bool:
        """[lo passes, hi fails] is fine enough to report ``lo``."""
        return hi - lo <= self.tolerance(lo)

    def known_bracket(self, tier: SloTier, verdicts: dict[int, Verdict]) -> tuple[int, int | None]:
        """(highest level passing ``tier`` below its lowest failing one, that failing level)
        from the levels already measured (by another tier): where this tier starts."""
        lo, hi = 0, None
        for c in sorted(self.levels):
            v = verdicts[c] = judge(self.levels[c], tier, self.max_error_rate)
            if not v.passed:
                return lo, c
            lo = c
        return lo, hi

    async def tier(self, tier: SloTier) -> TierResult:
        verdicts: dict[int, Verdict] = {}
        lo, hi = self.known_bracket(tier, verdicts)
        c = self.start if lo == 0 else self.next_coarse(tier, lo)
        ok: bool | None = None
        while hi is None and lo < self.max:  # coarse: double until a level fails
            ok = await self.passes(c, tier, verdicts)
            if ok is None:
                return TierResult(tier, lo, None, verdicts)
            if ok:
                lo, c = c, self.next_coarse(tier, c)
            else:
                hi = c
        step = "guess" if self.resolution_pct else "bisect"
        while hi is not None and not self.close_enough(lo, hi):  # fine
            c, step = self.next_level(tier, lo, hi, step, ok)
            if c <= 0:
                break
            ok = await self.passes(c, tier, verdicts)
            if ok is None:
                break  # bounded by the last fail, not searched to the resolution
            if ok:
                lo = c
            else:
                hi = c
        return TierResult(tier, lo, hi, verdicts)

    def next_coarse(self, tier: SloTier, c: int) -> int:
        """The level after ``c`` passed: double it, or, with a relative resolution, go just
        past where the margin, extrapolated from ``c`` and a passing level at least a fifth
        below it (closer ones differ by noise as much as by load), reaches zero when that is
        nearer: a fail there leaves a narrow bracket, and the most loaded level of all, the
        next doubling, is never simulated."""
        double = min(2 * c, self.max)
        below = [b for b in self.levels if b <= 0.8 * c]
        if not self.resolution_pct or not below:
            return double
        b = max(below)
        m_b, m_c = (margin(self.levels[x], tier, self.max_error_rate) for x in (b, c))
        if m_b is None or m_c is None or not m_b > m_c >= 0:
            return double
        at = c + (c - b) * m_c / (m_b - m_c)
        return min(double, max(c + math.ceil(2 * self.tolerance(c)),
                               math.ceil(at + self.tolerance(round(at)))))

    def next_level(self, tier: SloTier, lo: int, hi: int, step: str, last_ok: bool | None
                   ) -> tuple[int, str]:
        """The next fine level and the step after it: guess → across → bisect → guess …

        A guess is where the tier's margin crosses zero between the bracket's ends, kept in the
        middle half of the bracket. The level across it is the one that closes the bracket
        if it comes out the other way: just above a guess that passed, just below one that
        failed. The bisection after them bounds what a poor guess costs. Two bisections
        from closing the bracket, guessing saves nothing: bisect."""
        if step == "guess" and lo > 0 and hi - lo > 4 * self.tolerance(lo):
            g = crossing(self.levels[lo], self.levels[hi], lo, hi, tier, self.max_error_rate)
            if g is not None:
                return g, "across"
        if step == "across":
            if last_ok:
                c = lo + math.floor(self.tolerance(lo))
            else:
                c = min(hi - self.resolution,
                        math.ceil(hi / (1.0 + self.resolution_pct / 100.0)))
            if lo < c < hi:
                return c, "bisect"
        return (lo + hi) // 2, "guess" if self.resolution_pct else "bisect"

    async def run(self) -> SearchResult:
        # the strictest tier first: its levels are lower, and the looser tier reuses them
        order = sorted(self.tiers, key=lambda t: (-t.min_output_speed, t.max_ttft_s))
        done = {t.name: await self.tier(t) for t in order}
        return SearchResult(self.levels, [done[t.name] for t in self.tiers])


def margin(level: dict[str, Any], tier: SloTier, max_error_rate: float) -> float | None:
    """How far a level is inside the tier (> 0) or outside it (< 0), as the smaller log-ratio
    of its P25 speed to the floor and of the TTFT ceiling to its P95 TTFT; None when the
    level is judged on something else (errors, nothing completed)."""
    speed, ttft_ms = level.get("p25_output_speed"), level.get("p95_ttft_ms")
    if not _judged(level, max_error_rate) or not speed or not ttft_ms or speed <= 0 or ttft_ms <= 0:
        return None
    return min(math.log(speed / tier.min_output_speed),
               math.log(tier.max_ttft_s * 1000.0 / ttft_ms))


def crossing(lo_level: dict[str, Any], hi_level: dict[str, Any], lo: int, hi: int,
             tier: SloTier, max_error_rate: float) -> int | None:
    """Where the tier is crossed between the bracket's ends: a level strictly inside the middle
    half of [lo, hi]; None when the levels cannot say.

    Each criterion that fails at ``hi`` (and passes at ``lo``) is interpolated in the quantity
    that grows linearly with agents once the deployment saturates: the P95 TTFT (the queue
    wait; by Little's law a closed loop's response time is linear in its population past
    saturation) and 1 / P25 speed (decode shared by the batch); the nearest crossing wins.
    Below saturation both are flatter, so the guess errs low, and the level just above it
    (``next_level``'s "across") closes the bracket. Otherwise (judged on errors, say), the
    log margin is interpolated."""
    limits = ((_inverse(lo_level, "p25_output_speed"), _inverse(hi_level, "p25_output_speed"),
               1.0 / tier.min_output_speed),
              (lo_level.get("p95_ttft_ms"), hi_level.get("p95_ttft_ms"), tier.max_ttft_s * 1000.0))
    ats = [lo + (hi - lo) * (limit - a) / (b - a) for a, b, limit in limits
           if a is not None and b is not None and a <= limit < b]
    if ats and all(_judged(lv, max_error_rate) for lv in (lo_level, hi_level)):
        at = min(ats)
    else:
        m_lo, m_hi = (margin(lv, tier, max_error_rate) for lv in (lo_level, hi_level))
        if m_lo is None or m_hi is None or not m_lo >= 0 > m_hi:
            return None
        at = lo + (hi - lo) * m_lo / (m_lo - m_hi)
    quarter = (hi - lo) / 4.0
    return min(max(round(at), math.ceil(lo + quarter)), math.floor(hi - quarter))


def _inverse(level: dict[str, Any], key: str) -> float | None:
    value = level.get(key)
    return 1.0 / value if value else None


def _judged(level: dict[str, Any], max_error_rate: float) -> bool:
    """The level is judged on its speed and TTFT (it completed requests, within the error
    budget), as ``margin`` requires."""
    return bool(level.get("completed")) and level.get("error_rate", 0.0) <= max_error_rate
