"""Pareto frontiers over records, the views the report draws, and the best config at X tok/s/user.

A point is on the frontier when no other point is at least as good on both axes and better on
one; ``AXES`` says which direction is better for each metric. Only ok levels with both metrics
reach a frontier. Exact duplicates keep the first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from .records import Record, run_order


@dataclass(frozen=True)
class Axis:
    label: str
    higher_is_better: bool
    scale: float = 1.0  # plots and the dashboard show value × scale (ms → s)


AXES: dict[str, Axis] = {
    "output_tput_per_gpu": Axis("output tok/s per GPU", True),
    "total_tput_per_gpu": Axis("total tok/s per GPU", True),
    "input_tput_per_gpu": Axis("input tok/s per GPU", True),
    "interactivity": Axis("interactivity (tok/s/user)", True),
    "e2e_interactivity": Axis("E2E interactivity (tok/s/user)", True),
    "median_e2el_ms": Axis("median E2E latency (s)", False, 0.001),
    "median_ttft_ms": Axis("median TTFT (s)", False, 0.001),
    "median_tpot_ms": Axis("median TPOT (ms)", False),
    "usd_per_m_output_tokens": Axis("US$ per million output tokens", False),
    "usd_per_m_total_tokens": Axis("US$ per million tokens", False),
    "j_per_output_token": Axis("J per output token", False),
    "j_per_token": Axis("J per token", False),
}

# view name -> (y metric, x metric)
VIEWS: dict[str, tuple[str, str]] = {
    "throughput-vs-interactivity": ("output_tput_per_gpu", "interactivity"),
    "throughput-vs-e2e-latency": ("output_tput_per_gpu", "median_e2el_ms"),
    "cost-vs-interactivity": ("usd_per_m_output_tokens", "interactivity"),
    "energy-vs-interactivity": ("j_per_output_token", "interactivity"),
}
DEFAULT_Y, DEFAULT_X = VIEWS["throughput-vs-interactivity"]
DEFAULT_THRESHOLDS = (10.0, 20.0, 50.0, 100.0)
ALL = ("all",)


class Point(Protocol):
    @property
    def ok(self) -> bool: ...

    def metric(self, name: str) -> float | None: ...


P = TypeVar("P", bound=Point)
R = TypeVar("R")


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def usable(records: Iterable[P], *metrics: str) -> list[P]:
    """The ok records that have every one of ``metrics`` (finite)."""
    return [r for r in records if r.ok and all(_finite(r.metric(m)) for m in metrics)]


def frontier(records: Iterable[P], y: str = DEFAULT_Y, x: str = DEFAULT_X) -> list[P]:
    """The Pareto-optimal usable records, sorted by x ascending."""
    sy = 1.0 if AXES[y].higher_is_better else -1.0
    sx = 1.0 if AXES[x].higher_is_better else -1.0
    pts = [(sx * r.metric(x), sy * r.metric(y), i, r)  # type: ignore[operator]
           for i, r in enumerate(usable(records, x, y))]
    pts.sort(key=lambda p: (-p[0], -p[1], p[2]))  # best x first; ties: best y, then input order
    front: list[tuple[float, P]] = []
    best_y = -math.inf
    for ox, oy, _, r in pts:
        if oy > best_y:  # strictly better y than every point with at least as good an x
            front.append((sx * ox, r))
            best_y = oy
    front.sort(key=lambda p: p[0])
    return [r for _, r in front]


def group_by(records: Iterable[R], fields: Sequence[str]) -> dict[tuple[str, ...], list[R]]:
    """Records grouped by the values of ``fields``, in sorted key order."""
    groups: dict[tuple[str, ...], list[R]] = {}
    for r in records:
        groups.setdefault(tuple(getattr(r, f) for f in fields), []).append(r)
    return dict(sorted(groups.items(), key=lambda kv: tuple("" if v is None else str(v)
                                                             for v in kv[0])))


def frontiers(records: Iterable[Record], y: str = DEFAULT_Y, x: str = DEFAULT_X
              ) -> dict[tuple[str, ...], dict[tuple[str, ...], list[Record]]]:
    """Per (model, workload): the frontier over all (``("all",)``) and per (hardware, engine)."""
    out: dict[tuple[str, ...], dict[tuple[str, ...], list[Record]]] = {}
    for panel, recs in group_by(usable(records, x, y), ("model", "workload")).items():
        series = {ALL: frontier(recs, y, x)}
        for key, srecs in group_by(recs, ("hardware", "engine")).items():
            series[key] = frontier(srecs, y, x)
        out[panel] = series
    return out


@dataclass(frozen=True)
class Best:
    model: str
    workload: str
    threshold: float
    record: Record | None  # None: no level meets the threshold


def best_at(records: Iterable[Record], thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
            y: str = DEFAULT_Y, x: str = DEFAULT_X) -> list[Best]:
    """Per (model, workload) and threshold: among ok levels whose x meets the threshold, the one
    with the best y (measured levels only, no interpolation)."""
    better_x, better_y = AXES[x].higher_is_better, AXES[y].higher_is_better
    out = []
    for (model, workload), recs in group_by(usable(records, x, y), ("model", "workload")).items():
        for t in thresholds:
            meets = [r for r in recs if (r.metric(x) >= t if better_x else r.metric(x) <= t)]  # type: ignore[operator]
            best = None
            for r in meets:
                v, b = r.metric(y), None if best is None else best.metric(y)
                if b is None or (v > b if better_y else v < b):  # type: ignore[operator]
                    best = r
            out.append(Best(model, workload, t, best))
    return out


def latest_per_config(records: Iterable[Record]) -> list[Record]:
    """The latest run's measurement of each configuration (natural key)."""
    records = list(records)
    rank = {run: i for i, run in enumerate(run_order(records))}
    latest: dict[tuple[str, str, str, int], Record] = {}
    for r in records:
        old = latest.get(r.natural_key)
        if old is None or rank[r.run_id] >= rank[old.run_id]:
            latest[r.natural_key] = r
    return sorted(latest.values(), key=lambda r: r.key)
