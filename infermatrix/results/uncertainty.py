"""Each level's own uncertainty: a bootstrap interval of each headline metric, drawn from the
level's per-request samples (the client's ``request_samples``: TTFT, TPOT, E2E latency and
output tokens of every successful request).

A level of 40 requests and one of 640 measure the same configuration with very different
precision; compare weighs a change against it (results/regression.py). Seeded, so collecting
the same file twice gives the same record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

RESAMPLES = 400
LEVEL = 0.95
SEED = 20261127  # any constant: the same samples always give the same interval
MAX_SAMPLES = 1_000_000
# metric -> (per-request sample, statistic, higher-is-better direction of the value vs the
# statistic): throughput moves with output tokens per second of request time (a ratio of
# sums), interactivity is 1000 / median TPOT, the latencies are medians
STATISTICS = {
    "output_tput_per_gpu": ("ratio", 1),
    "interactivity": ("tpot_ms", -1),
    "median_ttft_ms": ("ttft_ms", 1),
    "median_e2el_ms": ("e2el_ms", 1),
}


def _column(samples: Mapping[str, Any], name: str) -> np.ndarray | None:
    values = samples.get(name)
    if not isinstance(values, list) or len(values) > MAX_SAMPLES:
        return None
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)
               and math.isfinite(v)]
    return np.asarray(numbers, dtype=np.float64)


def _ratios(samples: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray | None:
    """Resampled (Σ output tokens / Σ E2E) over its measured value: requests kept in pairs."""
    out, e2el = samples.get("output_tokens"), samples.get("e2el_ms")
    if not (isinstance(out, list) and isinstance(e2el, list) and len(out) == len(e2el)):
        return None
    pairs = [(o, e) for o, e in zip(out, e2el, strict=True)
             if all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                    for v in (o, e))]
    if len(pairs) < 2 or len(pairs) > MAX_SAMPLES:
        return None
    o, e = (np.asarray(c, dtype=np.float64) for c in zip(*pairs, strict=True))
    if e.sum() <= 0 or o.sum() <= 0:
        return None
    idx = rng.integers(0, len(o), size=(RESAMPLES, len(o)))
    return (o[idx].sum(axis=1) / np.maximum(e[idx].sum(axis=1), 1e-12)) / (o.sum() / e.sum())


def _medians(x: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """Resampled medians over the measured median."""
    if len(x) < 2:
        return None
    mid = float(np.median(x))
    if mid <= 0:
        return None
    return np.median(x[rng.integers(0, len(x), size=(RESAMPLES, len(x)))], axis=1) / mid


def intervals(samples: Any, values: Mapping[str, float | None]) -> dict[str, list[float]]:
    """metric -> [low, high], the 95 % bootstrap interval of each headline metric whose value
    and samples are known, scaled to the value the level reports."""
    if not isinstance(samples, Mapping):
        return {}
    rng = np.random.default_rng(SEED)
    out: dict[str, list[float]] = {}
    for metric, (source, sign) in STATISTICS.items():
        value = values.get(metric)
        if value is None or not math.isfinite(value) or value <= 0:
            continue
        if source == "ratio":
            rel = _ratios(samples, rng)
        else:
            column = _column(samples, source)
            rel = None if column is None else _medians(column, rng)
        if rel is None:
            continue
        if sign < 0:  # the value is the statistic's reciprocal
            rel = 1.0 / np.maximum(rel, 1e-12)
        tail = (1.0 - LEVEL) / 2 * 100
        low, high = np.percentile(rel, [tail, 100 - tail])
        out[metric] = [float(f"{value * low:.5g}"), float(f"{value * high:.5g}")]
    return out


def relative_sigma(value: float | None, interval: list[float] | None) -> float | None:
    """The interval as a standard deviation of log(value) (a normal approximation)."""
    if value is None or not interval or value <= 0 or min(interval) <= 0:
        return None
    z = 1.959963984540054  # the normal quantile of the 95 % interval
    return (math.log(interval[1]) - math.log(interval[0])) / (2 * z)
