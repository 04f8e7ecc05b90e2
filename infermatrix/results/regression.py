"""When is a change a regression? Only when it exceeds the noise of both kinds:

- the levels' own uncertainty: each level's 95 % bootstrap interval from its per-request
  samples (results/uncertainty.py), combined for the two levels compared;
- the configuration's night-to-night spread: the standard deviation of the metric over the
  last ``lookback`` runs of the history that measured it (a lookback window, as Conbench's
  z-score), known once ``MIN_NIGHTS`` runs have it; before that the fixed ``noise`` band
  stands in for it.

Spreads are standard deviations of log(value) (relative spreads): with ``σ_level = √(σ_base² +
σ_new²)`` and ``σ_nights`` the history's, a relative change ``Δ = new / base − 1`` is
significant when ``|Δ| > z · σ_level`` and ``|Δ| > z · √2 · σ_nights`` (the difference of two
nights has √2 times one night's spread), or ``|Δ| > noise`` where the nights are not known
yet. The confidence reported is the two-sided normal confidence of ``log(new / base)`` against
the larger of the two spreads.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .records import NaturalKey, Record, run_order
from .uncertainty import relative_sigma

# The rule's defaults, here only: the CLI's flags and the dashboard's compare view (its data's
# ``compare_rule``, see ``page_settings``) both read them.
DEFAULT_Z = 5.0  # Conbench's default z threshold; see docs/results.md for what it detects
DEFAULT_NOISE = 0.03  # the band standing in for the nights of a configuration with little history
DEFAULT_LOOKBACK = 10  # runs
MIN_NIGHTS = 3  # runs of a configuration before its night-to-night spread is trusted


@dataclass(frozen=True)
class Rule:
    """The regression rule's settings (``infermatrix compare --noise --z --lookback``)."""

    noise: float = DEFAULT_NOISE  # the band used before a configuration has MIN_NIGHTS runs of history
    z: float = DEFAULT_Z
    nights: Mapping[tuple[NaturalKey, str], list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """One headline metric of one configuration, judged."""

    metric: str
    change: float  # (new − base) / base
    worse: bool  # the change is in the bad direction
    significant: bool
    band: float  # the smallest relative change the rule calls significant here
    level_sigma: float | None  # log-scale standard deviation from the two levels' intervals
    night_sigma: float | None  # log-scale night-to-night standard deviation of the history
    nights: int  # runs of history the night spread came from
    confidence: float | None  # that the change is real (two-sided); None: no noise known

    def text(self) -> str:
        """``−10.2 % (levels ±1.1 %, nights ±0.8 % over 7 runs; 99.99 % confidence)``."""
        parts = []
        if self.level_sigma is not None:
            parts.append(f"levels ±{_pct(1.96 * self.level_sigma)}")
        if self.night_sigma is not None:
            parts.append(f"nights ±{_pct(1.96 * self.night_sigma)} over {self.nights} runs")
        else:
            parts.append(f"band ±{_pct(self.band)}: under {MIN_NIGHTS} runs of history")
        conf = "" if self.confidence is None else f"; {confidence_text(self.confidence)} confidence"
        return f"{self.change:+.1%} ({', '.join(parts)}{conf})"


def _pct(x: float) -> str:
    return f"{x:.1%}"


def confidence_text(c: float) -> str:
    """99.9 % rather than 100 %: a normal tail is never zero."""
    for digits in range(1, 6):
        if round(c * 100, digits - 1) < 100:
            return f"{c * 100:.{digits - 1}f}%"
    return ">99.999%"


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def night_sigma(values: list[float]) -> float | None:
    """The standard deviation of log(value) over the history's runs (None: too few)."""
    logs = [math.log(v) for v in values if v is not None and v > 0]
    return statistics.stdev(logs) if len(logs) >= MIN_NIGHTS else None


def judge(metric: str, higher: bool, base: Record, new: Record, rule: Rule) -> Verdict | None:
    """The verdict on one metric, or None when either side lacks it."""
    old, now = base.metric(metric), new.metric(metric)
    if old is None or now is None or old <= 0 or now <= 0:
        return None
    d = math.log(now / old)
    sigmas = [relative_sigma(r.metric(metric), r.ci95.get(metric)) for r in (base, new)]
    level = math.sqrt(sum(s * s for s in sigmas if s is not None)) if any(
        s is not None for s in sigmas) else None
    history = rule.nights.get((new.natural_key, metric), [])
    nights = night_sigma(history)
    band = max(rule.z * (level or 0.0),
               rule.z * math.sqrt(2) * nights if nights is not None else rule.noise)
    change = (now - old) / old
    # the noise a change is weighed against: the larger of the two (the band without either)
    scale = max(level or 0.0, math.sqrt(2) * nights if nights is not None else 0.0)
    conf = 2 * _phi(abs(d) / scale) - 1 if scale > 0 else None
    return Verdict(metric, change, (d < 0) == higher, abs(change) > band, band,
                   level, nights, len(history) if nights is not None else 0, conf)


def history_runs(order: Sequence[str], base_run: str, exclude: Collection[str],
                 lookback: int = DEFAULT_LOOKBACK) -> list[str]:
    """The runs whose night-to-night spread a change from ``base_run`` is weighed against: the
    last ``lookback`` of ``order`` (oldest first) up to ``base_run``, never those of the new
    side (``exclude``). The dashboard's compare view takes the same window (assets/dashboard.js
    ``historyRuns``)."""
    kept = [r for r in order if r not in exclude]
    return kept[:kept.index(base_run) + 1][-lookback:] if base_run in kept else [base_run]


def page_settings(order: Sequence[str]) -> dict[str, Any]:
    """What the dashboard's compare view needs to judge as ``infermatrix compare`` does: the
    defaults above and the runs in order (``order``: every run of the history, a run whose
    every job failed too, as ``Store.runs()``) that ``history_runs`` windows."""
    return {"z": DEFAULT_Z, "noise": DEFAULT_NOISE, "lookback": DEFAULT_LOOKBACK,
            "min_nights": MIN_NIGHTS, "runs": list(order)}


def night_history(records: Iterable[Record], lookback: int = DEFAULT_LOOKBACK,
                  metrics: Iterable[str] = ()) -> dict[tuple[NaturalKey, str], list[float]]:
    """(configuration, metric) -> its values in the last ``lookback`` runs of ``records`` that
    measured it (OK levels only, oldest first)."""
    records = [r for r in records if r.ok]
    order = {run: i for i, run in enumerate(run_order(records))}
    per_key: dict[NaturalKey, list[Record]] = {}
    for r in sorted(records, key=lambda r: order[r.run_id]):
        per_key.setdefault(r.natural_key, []).append(r)
    out: dict[tuple[NaturalKey, str], list[float]] = {}
    for key, recs in per_key.items():
        window = recs[-lookback:]
        for m in metrics:
            values = [v for v in (r.metric(m) for r in window) if v is not None]
            if values:
                out[(key, m)] = values
    return out
