"""The trend view: per configuration each headline metric across runs, change points marked
where a configuration got slower (and nowhere else), reachable from a point's tooltip and from
the compare view."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from pathlib import Path

import pytest
from browser_helpers import SET
from imx_support.headless import open_page
from imx_support.synthetic import SynthJob, write_job

from infermatrix.report import build_report
from infermatrix.report.trend import change_points
from infermatrix.results import collect

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
RUNS = tuple(f"202611{d:02d}T011700Z-{d:06d}" for d in range(1, 10))
STEADY = SynthJob(concurrency=(4, 32))
SLOWER = SynthJob(hardware="B200", concurrency=(4, 32), speed=1.6)
SLOW_FROM = 5  # the B200 configuration is 20 % slower from this run on


def test_change_points_find_steps_not_noise() -> None:
    rng = random.Random(7)
    noise = [[100 + rng.gauss(0, 2) for _ in range(40)] for _ in range(50)]
    assert sum(len(change_points(v)) for v in noise) <= 2  # 2 % spread, 40 nights, 50 series
    assert change_points([100.0] * 12) == []
    for v in noise[:10]:  # a 10 % step on the same noise is found, where it happened
        found = change_points(v[:25] + [x * 0.9 for x in v[25:]])
        assert [i for i, _ in found] == [25] and found[0][1] == pytest.approx(-0.1, abs=0.03)
    assert [i for i, _ in change_points([100.0] * 8 + [112.0] * 8 + [100.0] * 8)] == [8, 16]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trend")
    for i, run in enumerate(RUNS):
        slow = dataclasses.replace(SLOWER, speed=SLOWER.speed * (0.8 if i >= SLOW_FROM else 1.0))
        for job in (STEADY, slow):
            write_job(root / run, job)
    records = collect([root / run for run in RUNS]).records
    return build_report(records, root / "site", plots=False)["dashboard"]


def _key(job: SynthJob) -> str:
    return "\u0000".join((job.recipe, job.workload, job.runner))


def test_trend_view_marks_where_a_configuration_changed(chromium: str, site: Path) -> None:
    charts = "document.getElementById('trend-charts')"

    async def scenario() -> None:
        async with open_page(chromium) as page:
            await page.goto(site.as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            # from the compare view: the slower configuration's trend button
            await page.eval("document.querySelector('nav button[data-view=compare]').click()")
            await page.eval(f"document.querySelector('#cmp button[data-trend=\"{SLOWER.recipe}"
                            f"\\u0000{SLOWER.workload}\\u0000{SLOWER.runner}\"]').click()")
            assert await page.eval("imx.state.view") == "trend"
            assert await page.eval(f"{charts}.dataset.key") == _key(SLOWER)
            assert await page.eval("document.querySelectorAll('#trend-charts figure.trend').length") == 4
            runs = await page.eval("Array.from(document.querySelectorAll('#trend-charts .change'))"
                                   ".map((g) => g.dataset.run)")
            assert runs and set(runs) == {RUNS[SLOW_FROM]}  # throughput, interactivity, latencies
            # opened at the compare row's level: one line per metric; all levels: one per level
            assert await page.eval("document.querySelectorAll('#trend-charts polyline').length") == 4
            await page.eval(SET.format(id="t-conc", value="__all__"))
            assert await page.eval("document.querySelectorAll('#trend-charts polyline').length") == 2 * 4
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(ARTIFACTS / "trend.png")
            # the steady configuration: the same lines, no change point
            await page.eval(SET.format(id="t-config", value=_key(STEADY)))
            assert await page.eval(f"{charts}.dataset.changes") == "0"
            await page.eval(SET.format(id="t-conc", value="32"))
            assert await page.eval("document.querySelectorAll('#trend-charts polyline').length") == 4
            # from a point's tooltip: pin the first point, follow its trend button
            await page.eval("document.querySelector('nav button[data-view=chart]').click()")
            box = await page.eval("(() => { const b = document.getElementById('chart').getBoundingClientRect();"
                                  " const p = imx.chart.pts[0]; return [b.left + p.px, b.top + p.py]; })()")
            for kind in ("mousePressed", "mouseReleased"):
                await page.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1],
                                button="left", clickCount=1)
            await page.wait_for("document.getElementById('tip').classList.contains('pinned')")
            key = await page.eval("(() => { const r = imx.chart.pts[0].r; return [r.recipe, r.workload, r.runner].join('\\u0000'); })()")
            await page.eval("document.querySelector('#tip button[data-trend]').click()")
            assert await page.eval("imx.state.view") == "trend"
            assert await page.eval(f"{charts}.dataset.key") == key
            assert page.errors == []

    asyncio.run(asyncio.wait_for(scenario(), 120))
