"""The trend view's data: per configuration, each headline metric across runs, change points marked.

A configuration is a recipe × workload × runner (the compare view's key without the level); its
trend holds, per concurrency level, each headline metric's value in every run that measured it,
oldest run first. Change points are found per level and metric as step-detection services do
(asv): at each run, the ``WINDOW`` runs before and after it are compared; it is a change when
the step between their means is at least ``MIN_STEP`` of the level before and ``MIN_T`` times
its standard error (the pooled spread of the two windows, floored at ``NOISE_FLOOR`` of the
mean, so a flat series of identical values is not "infinitely" significant over a 0.1 %
wobble), keeping the strongest of neighbouring candidates.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..results.compare import HEADLINE
from ..results.records import Record

MIN_SEGMENT = 3  # runs on each side of a change, and between two changes
WINDOW = 6  # runs compared on each side
MIN_STEP = 0.05  # relative change of the mean
MIN_T = 4.0  # step / standard error
NOISE_FLOOR = 0.01  # of the mean: the least spread assumed

ConfigKey = tuple[str, str, str]  # recipe, workload, runner


def config_key(r: Record) -> ConfigKey:
    return (r.recipe, r.workload, r.runner)


def key_text(key: ConfigKey) -> str:
    """The key as one string (the page's and the chunk files' name for a configuration)."""
    return "\u0000".join(key)


def change_points(values: Sequence[float]) -> list[tuple[int, float]]:
    """(index of the first run after the change, relative step) of each change in ``values``:
    where the ``WINDOW`` runs before and after differ most, locally, and enough."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    if n < 2 * MIN_SEGMENT:
        return []
    s1 = np.concatenate(([0.0], np.cumsum(v)))  # window sums from prefix sums: O(n) in all
    s2 = np.concatenate(([0.0], np.cumsum(v * v)))
    i = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    lo, hi = np.maximum(0, i - WINDOW), np.minimum(n, i + WINDOW)
    nl, nr = i - lo, hi - i
    ml, mr = (s1[i] - s1[lo]) / nl, (s1[hi] - s1[i]) / nr
    sq = (s2[i] - s2[lo] - nl * ml * ml) + (s2[hi] - s2[i] - nr * mr * mr)  # within both windows
    sd = np.sqrt(np.maximum(sq, 0.0) / np.maximum(nl + nr - 2, 1))
    sd = np.maximum(sd, NOISE_FLOOR * np.abs((s1[hi] - s1[lo]) / (nl + nr)))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, np.abs(mr - ml) / (sd * np.sqrt(1 / nl + 1 / nr)), 0.0)
        step = np.where(ml != 0, (mr - ml) / np.abs(ml), np.inf)
    found = [(float(t[k]), int(i[k]), float(step[k])) for k in
             np.flatnonzero((t >= MIN_T) & (np.abs(step) >= MIN_STEP))]
    kept: list[tuple[int, float]] = []
    for _, at, st in sorted(found, reverse=True):  # the strongest of neighbouring candidates
        if all(abs(at - j) >= MIN_SEGMENT for j, _ in kept):
            kept.append((at, st))
    return sorted(kept)


def _round(v: float) -> float:
    return float(f"{v:.5g}")


def trends(records: Sequence[Record], runs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """key_text(config) → its trend: ``levels`` {concurrency: {metric: [[run index, value],
    ...]}} (run index into ``runs``, oldest first) and ``changes`` [[metric, concurrency, run
    index, relative step], ...]. Only ok levels count."""
    where = {run: i for i, run in enumerate(runs)}
    series: dict[ConfigKey, dict[int, dict[str, list[list[float]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for r in sorted(records, key=lambda r: where.get(r.run_id, -1)):
        if not r.ok or r.run_id not in where:
            continue
        for metric, _ in HEADLINE:
            v = r.metric(metric)
            if v is not None and math.isfinite(v):
                series[config_key(r)][r.concurrency][metric].append([where[r.run_id], _round(v)])
    out: dict[str, dict[str, Any]] = {}
    for key, levels in series.items():
        changes = []
        for conc, metrics in levels.items():
            for metric, points in metrics.items():
                for i, step in change_points([p[1] for p in points]):
                    changes.append([metric, conc, int(points[i][0]), _round(step)])
        out[key_text(key)] = {"levels": {str(c): dict(m) for c, m in sorted(levels.items())},
                              "changes": sorted(changes, key=lambda c: (c[2], c[0], c[1]))}
    return out
