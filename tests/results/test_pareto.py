"""Pareto frontiers, the panels and series of a report, best-at-X and latest-per-configuration."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st
from imx_results_data import make_raw

from infermatrix.results.pareto import (
    AXES,
    VIEWS,
    best_at,
    frontier,
    frontiers,
    group_by,
    latest_per_config,
    usable,
)
from infermatrix.results.records import Record, normalise

Y, X = "output_tput_per_gpu", "interactivity"


@dataclass(frozen=True)
class P:
    """A bare point: x = interactivity (higher is better), y = output tok/s/GPU."""

    x: float | None
    y: float | None
    ok: bool = True
    name: str = ""

    def metric(self, name: str) -> float | None:
        return {X: self.x, Y: self.y, "median_e2el_ms": self.x}.get(name)


def names(points: list[P]) -> list[str]:
    return [p.name for p in points]


def test_frontier_by_hand() -> None:
    pts = [P(10, 100, name="a"), P(20, 80, name="b"), P(20, 70, name="b-worse"),
           P(15, 60, name="under"), P(40, 30, name="c"), P(40, 30, name="c-again"),
           P(5, 100, name="a-slower"), P(50, 500, ok=False, name="failed"),
           P(None, 900, name="no-tpot"), P(float("nan"), 900, name="nan")]
    # sorted by x; a duplicate keeps the first; failed levels and missing metrics never count
    assert names(frontier(pts)) == ["a", "b", "c"]
    assert names(frontier(pts, Y, X)) == names(frontier(pts))
    assert frontier([]) == []


def test_lower_is_better_axes_turn_the_frontier_around() -> None:
    assert AXES["median_e2el_ms"].higher_is_better is False
    pts = [P(10, 100, name="fast-big"), P(20, 100, name="slow-big"), P(5, 50, name="fastest")]
    assert names(frontier(pts, Y, "median_e2el_ms")) == ["fastest", "fast-big"]


def test_views_name_known_axes() -> None:
    assert set(VIEWS) == {"throughput-vs-interactivity", "throughput-vs-e2e-latency",
                          "cost-vs-interactivity", "energy-vs-interactivity"}
    assert all(y in AXES and x in AXES for y, x in VIEWS.values())


def rec(hw: str, conc: int, tput: float, tpot: float, **block: object) -> Record:
    """A level on H200/sglang-like hardware: ``tput`` output tok/s over 8 GPUs."""
    engine = block.pop("engine", "sglang")
    return normalise(make_raw({"hardware": hw, "engine": engine, "concurrency": conc,
                               "recipe": f"m/{hw.lower()}-{engine}",
                               "job_id": f"{hw}-{engine}", **block},
                              output_throughput=tput * 8, median_tpot_ms=tpot))


def test_frontiers_per_panel_and_series() -> None:
    records = [rec("H200", 1, 50, 10), rec("H200", 8, 200, 40), rec("B200", 1, 90, 8),
               rec("B200", 8, 150, 50), rec("H200", 4, 10, 100),
               rec("H200", 2, 100, 20, engine="vllm"),
               rec("H200", 1, 20, 10, workload="fixed-8k-1k"),
               rec("B200", 64, 999, 5, status="failed", error="error rate")]
    panels = frontiers(records)
    model = "deepseek-r1-0528"
    assert list(panels) == [(model, "fixed-1k-1k"), (model, "fixed-8k-1k")]
    main = panels[(model, "fixed-1k-1k")]
    assert list(main) == [("all",), ("B200", "sglang"), ("H200", "sglang"), ("H200", "vllm")]
    best = [(r.hardware, r.concurrency) for r in main[("all",)]]
    assert best == [("H200", 8), ("H200", 2), ("B200", 1)]
    assert [r.concurrency for r in main[("H200", "sglang")]] == [8, 1]  # c=4 is dominated
    assert len(usable(records, X, Y)) == 7  # the failed level is not usable


def test_best_at_threshold() -> None:
    records = [rec("H200", 1, 50, 10), rec("H200", 8, 200, 40), rec("B200", 1, 90, 8),
               rec("B200", 64, 999, 5, status="failed")]
    best = {b.threshold: b.record for b in best_at(records, (20, 100, 200))}
    assert (best[20].hardware, best[20].concurrency) == ("H200", 8)  # 25 tok/s/user ≥ 20
    assert (best[100].hardware, best[100].concurrency) == ("B200", 1)  # 125 ≥ 100, 90 > 50
    assert best[200] is None  # nothing that fast (the failed level does not count)
    assert [b.threshold for b in best_at(records)] == [10, 20, 50, 100]


def test_latest_per_config_and_group_by() -> None:
    old = rec("H200", 1, 50, 10, run_id="r1", started_at="2026-11-01T00:00:00Z")
    new = rec("H200", 1, 40, 10, run_id="r2", started_at="2026-11-02T00:00:00Z")
    other = rec("H200", 8, 40, 10, run_id="r1", started_at="2026-11-01T00:00:00Z")
    assert latest_per_config([new, old, other]) == [other, new]
    assert list(group_by([new, other], ("concurrency",))) == [(1,), (8,)]


def dominates(a: P, b: P) -> bool:
    return a.x >= b.x and a.y >= b.y and (a.x > b.x or a.y > b.y)  # type: ignore[operator]


coord = st.integers(min_value=0, max_value=30).map(float)  # small ints: many ties and duplicates


@given(st.lists(st.tuples(coord, coord, st.booleans()), max_size=60))
def test_frontier_properties(raw: list[tuple[float, float, bool]]) -> None:
    pts = [P(x, y, ok, name=str(i)) for i, (x, y, ok) in enumerate(raw)]
    ok = [p for p in pts if p.ok]
    front = frontier(pts)
    assert all(p.ok for p in front)
    assert [p.x for p in front] == sorted(p.x for p in front)
    # no frontier point is dominated by any point, and no two are the same point
    assert not any(dominates(q, p) for p in front for q in ok)
    assert len({(p.x, p.y) for p in front}) == len(front)
    # every other point is dominated by a frontier point, or duplicates one (the first is kept)
    chosen = set(map(id, front))
    for p in ok:
        if id(p) not in chosen:
            assert any(dominates(f, p) or (f.x, f.y) == (p.x, p.y) for f in front)
    for f in front:  # of exact duplicates, the frontier keeps the first in input order
        assert f is next(p for p in ok if (p.x, p.y) == (f.x, f.y))
