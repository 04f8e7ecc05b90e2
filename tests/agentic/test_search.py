"""The search algorithm alone: coarse doubling, bisection, shared levels, edge cases."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from infermatrix.capacity.search import CapacitySearch
from infermatrix.capacity.tiers import SLO20, SLO60, SloTier, judge


def level_with_limits(limits: dict[str, int]):
    """A level summary whose speed/TTFT pass a tier exactly up to that tier's limit."""
    measured: list[int] = []

    async def measure(c: int) -> dict[str, Any]:
        measured.append(c)
        ok20, ok60 = c <= limits["SLO20"], c <= limits["SLO60"]
        return {
            "completed": 10,
            "error_rate": 0.0,
            "p25_output_speed": 70.0 if ok60 else 30.0 if ok20 else 5.0,
            "p95_ttft_ms": 1000.0 if ok60 else 8000.0 if ok20 else 20000.0,
        }

    return measure, measured


@pytest.mark.parametrize("limit", [1, 2, 3, 37, 64, 100])
def test_finds_exact_threshold_at_resolution_one(limit: int) -> None:
    measure, _ = level_with_limits({"SLO20": limit, "SLO60": limit})
    res = asyncio.run(CapacitySearch(measure, [SLO20], max_concurrency=1024).run())
    assert res.tiers[0].passing_concurrency == limit
    assert res.tiers[0].first_failing == limit + 1


def test_coarse_resolution_is_within_one_step() -> None:
    measure, _ = level_with_limits({"SLO20": 37, "SLO60": 37})
    t = asyncio.run(CapacitySearch(measure, [SLO20], resolution=4).run()).tiers[0]
    assert t.passing_concurrency <= 37 < t.first_failing
    assert t.first_failing - t.passing_concurrency <= 4


def test_tiers_share_levels_and_keep_their_order() -> None:
    measure, measured = level_with_limits({"SLO20": 50, "SLO60": 12})
    res = asyncio.run(CapacitySearch(measure, [SLO20, SLO60]).run())
    assert [t.tier.name for t in res.tiers] == ["SLO20", "SLO60"]
    assert [t.passing_concurrency for t in res.tiers] == [50, 12]
    assert len(measured) == len(set(measured)), "a level was measured twice"
    assert measured[:5] == [1, 2, 4, 8, 16]  # the stricter tier ran first; SLO20 reused them


def test_nothing_passes_and_max_reached() -> None:
    measure, _ = level_with_limits({"SLO20": 0, "SLO60": 0})
    t = asyncio.run(CapacitySearch(measure, [SLO20]).run()).tiers[0]
    assert (t.passing_concurrency, t.first_failing) == (0, 1)
    measure, _ = level_with_limits({"SLO20": 10_000, "SLO60": 10_000})
    t = asyncio.run(CapacitySearch(measure, [SLO20], max_concurrency=24).run()).tiers[0]
    assert (t.passing_concurrency, t.bounded) == (24, False)


def test_judge_reasons() -> None:
    tier = SloTier.parse("X=20:10")
    assert judge({"completed": 5, "p25_output_speed": 25, "p95_ttft_ms": 9000}, tier).passed
    v = judge(
        {"completed": 5, "p25_output_speed": 19, "p95_ttft_ms": 11000, "error_rate": 0.2}, tier
    )
    assert (
        not v.passed
        and "P25 output speed" in v.reason
        and "P95 TTFT" in v.reason
        and "error rate" in v.reason
    )
    assert tier.scaled(10).min_output_speed == 200 and tier.scaled(10).max_ttft_s == 1.0
    with pytest.raises(ValueError):
        SloTier.parse("X=20")


def smooth_levels(root: float):
    """A level whose P25 speed falls smoothly (and convexly) through SLO20's floor at ``root``."""
    measured: list[int] = []

    async def measure(c: int) -> dict[str, Any]:
        measured.append(c)
        return {"completed": 10, "error_rate": 0.0, "p95_ttft_ms": 1000.0,
                "p25_output_speed": 20.0 * (2.0 - (c / root) ** 2)}

    return measure, measured


@pytest.mark.parametrize("root", [37.5, 650.5, 1090.5, 3000.5])
def test_relative_resolution_brackets_the_crossing_in_fewer_levels(root: float) -> None:
    measure, measured = smooth_levels(root)
    t = asyncio.run(CapacitySearch(measure, [SLO20], start=8, resolution=8, resolution_pct=5,
                                   max_concurrency=4096).run()).tiers[0]
    assert t.passing_concurrency <= root < t.first_failing
    assert t.first_failing - t.passing_concurrency <= max(8, 0.05 * t.passing_concurrency)
    absolute, measured_abs = smooth_levels(root)
    asyncio.run(CapacitySearch(absolute, [SLO20], start=8, resolution=8,
                               max_concurrency=4096).run())
    assert len(measured) <= len(measured_abs), (measured, measured_abs)


def test_a_tier_starts_from_the_bracket_other_tiers_measured() -> None:
    measure, measured = level_with_limits({"SLO20": 700, "SLO60": 300})
    res = asyncio.run(CapacitySearch(measure, [SLO20, SLO60], start=8, resolution=8,
                                     resolution_pct=5).run())
    assert [t.passing_concurrency for t in res.tiers][1] <= 300
    slo20 = res.tiers[0]
    assert slo20.passing_concurrency <= 700 < slo20.first_failing
    assert len(measured) == len(set(measured))


def test_relative_resolution_is_bounded() -> None:
    measure, _ = level_with_limits({"SLO20": 1, "SLO60": 1})
    for pct in (-1, 51):
        with pytest.raises(ValueError):
            CapacitySearch(measure, [SLO20], resolution_pct=pct)


def queueing_levels(knee: int, ms_per_agent: float):
    """A saturated closed loop: P95 TTFT flat up to ``knee`` agents, then growing linearly
    (Little's law: the queue wait of a saturated server is linear in its population), while
    the output speed stays far above the floor (the queue is before the first token)."""
    measured: list[int] = []

    async def measure(c: int) -> dict[str, Any]:
        measured.append(c)
        return {"completed": 10, "error_rate": 0.0, "p25_output_speed": 150.0,
                "p95_ttft_ms": 150.0 + ms_per_agent * max(0, c - knee)}

    return measure, measured


@pytest.mark.parametrize("knee,ms_per_agent", [(1200, 27.0), (300, 120.0), (40, 900.0)])
def test_a_ttft_bound_tier_is_guessed_from_the_queueing_line(knee: int, ms_per_agent: float
                                                             ) -> None:
    """The guess interpolates the TTFT itself (linear past saturation, flat before): it lands
    at or below the crossing, never past it, and the search needs no more levels than
    bisecting the same bracket."""
    measure, measured = queueing_levels(knee, ms_per_agent)
    t = asyncio.run(CapacitySearch(measure, [SLO20], start=8, resolution=8, resolution_pct=5,
                                   max_concurrency=4096).run()).tiers[0]
    crossing = knee + (SLO20.max_ttft_s * 1000.0 - 150.0) / ms_per_agent
    assert t.passing_concurrency <= crossing < t.first_failing
    assert t.first_failing - t.passing_concurrency <= max(8, 0.05 * t.passing_concurrency)
    coarse = [c for c in measured if c & (c - 1) == 0]  # 8, 16, ... up to the first fail
    assert measured[len(coarse)] <= crossing, measured  # the first guess errs low
    bisecting, measured_bisect = queueing_levels(knee, ms_per_agent)
    asyncio.run(CapacitySearch(bisecting, [SLO20], start=8, resolution=8,
                               max_concurrency=4096).run())
    assert len(measured) <= len(measured_bisect), (measured, measured_bisect)
