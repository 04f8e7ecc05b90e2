"""How close the simulator came to the published numbers: one row's outcome (error = simulated /
published − 1, a bound met counting as exact) and a set of rows' summary (median |error|,
share within 20% and within 2×, bias), overall, per kind of metric and per source.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .published import PublishedRow, source_key

SKIPPED = "skipped"  # an outcome's detail for a row left unsimulated (out of every summary)


@dataclass
class Outcome:
    row: PublishedRow
    simulated: float | None
    detail: str = ""

    @property
    def error(self) -> float | None:
        """simulated / published − 1 (positive: the simulator is too optimistic for
        throughput-like metrics, too pessimistic for latencies: TPOT, TTFT, E2E, ITL); for a
        bound, 0 when the simulated value meets it."""
        if self.simulated is None:
            return None
        err = self.simulated / self.row.value - 1.0
        if (self.row.bound == "at_most" and err <= 0) or (self.row.bound == "at_least" and err >= 0):
            return 0.0
        return err

    @property
    def ratio(self) -> float | None:
        """max(sim/pub, pub/sim): 1 is exact (or a bound met), 2 is off by 2×."""
        if not self.simulated:
            return None
        r = 1.0 + (self.error or 0.0)
        return max(r, 1.0 / r)


@dataclass(frozen=True)
class Summary:
    rows: int
    simulated: int
    median_error: float  # median |sim/pub − 1|
    within_20: float  # share of rows with |error| ≤ 20%
    within_2x: float  # share within a factor of 2
    median_signed: float  # median sim/pub − 1: the bias

    def line(self, name: str) -> str:
        if not self.simulated:
            return f"{name}: no rows simulated ({self.rows} rows)"
        return (f"{name}: {self.simulated}/{self.rows} rows simulated, median |error| "
                f"{self.median_error:.0%}, within 20%: {self.within_20:.0%}, within 2x: "
                f"{self.within_2x:.0%}, bias {self.median_signed:+.0%}")


def summarise(outcomes: Sequence[Outcome]) -> Summary:
    """Rows that could not be simulated count as misses in the shares; skipped rows do not
    count."""
    outcomes = [o for o in outcomes if not o.detail.startswith(SKIPPED)]
    errs = [o.error for o in outcomes if o.error is not None]
    ratios = [o.ratio for o in outcomes if o.ratio is not None]
    n = len(outcomes)
    if not errs:
        return Summary(n, 0, math.inf, 0.0, 0.0, 0.0)
    return Summary(
        rows=n, simulated=len(errs),
        median_error=statistics.median(abs(e) for e in errs),
        within_20=sum(1 for e in errs if abs(e) <= 0.2) / n,
        within_2x=sum(1 for r in ratios if r <= 2.0) / n,
        median_signed=statistics.median(errs),
    )


# What each metric measures, for the per-kind figures.
KINDS = {"throughput": ("output_tps_per_gpu", "total_tps_per_gpu", "output_tps"),
         "TPOT": ("tpot_ms", "itl_ms", "output_tps_per_user"), "TTFT": ("ttft_ms",),
         "E2E latency": ("e2e_latency_ms",), "agents/GPU": ("agents_per_gpu",)}


def per_kind(outcomes: Sequence[Outcome]) -> dict[str, Summary]:
    """The summary of each kind of metric (throughput, TPOT, TTFT, ...) with rows."""
    out = {}
    for kind, metrics in KINDS.items():
        part = [o for o in outcomes if o.row.metric in metrics]
        if part:
            out[kind] = summarise(part)
    return out


def per_source_median(outcomes: Sequence[Outcome]) -> float:
    """The median over sources of each source's median |error|: every left-out source weighs
    the same, however many rows it has."""
    by: dict[str, list[float]] = {}
    for o in outcomes:
        if o.error is not None:
            by.setdefault(source_key(o.row), []).append(abs(o.error))
    return statistics.median(statistics.median(v) for v in by.values()) if by else math.inf
