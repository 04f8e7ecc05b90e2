"""A long history is loaded lazily: index.html holds the latest run only, older runs and the
trends are chunk files read when a view needs them (run filter, compare, all runs, trend), from
file:// too; a report written again leaves no stale chunk behind."""

from __future__ import annotations

import asyncio
from pathlib import Path

from browser_helpers import SET, embedded
from imx_support.headless import open_page
from imx_support.synthetic import SynthJob, write_job

from infermatrix.report import build_report
from infermatrix.report.dashboard import DATA_FOLDER
from infermatrix.results import collect

RUNS = tuple(f"202611{d:02d}T011700Z-{d:06d}" for d in range(1, 7))
JOBS = (SynthJob(concurrency=(1, 4, 16)), SynthJob(hardware="B200", concurrency=(1, 4, 16)))
PER_RUN = sum(len(j.concurrency) for j in JOBS)
LOADED = "document.body.dataset.loading === '0'"


def _site(root: Path, runs: tuple[str, ...] = RUNS, inline_limit: int = 0) -> Path:
    for run in runs:
        for job in JOBS:
            write_job(root / "in" / run, job)
    records = collect([root / "in" / run for run in runs]).records
    return build_report(records, root / "site", plots=False, inline_limit=inline_limit)["dashboard"]


def test_older_runs_and_trends_load_when_needed(chromium: str, tmp_path: Path) -> None:
    index = _site(tmp_path)
    folder = index.parent / DATA_FOLDER
    assert sorted(p.name for p in folder.glob("run-*.js")) == [f"run-{i}.js" for i in range(len(RUNS) - 1)]
    assert len(list(folder.glob("trend-*.js"))) == len(JOBS)
    inline = embedded(index)["chunks"]["inline"]
    assert list(inline["runs"]) == [str(len(RUNS) - 1)] and inline["trends"] == {}  # latest only

    async def scenario() -> None:
        async with open_page(chromium) as page:
            await page.goto(index.as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            assert await page.eval("imx.rows.length") == PER_RUN  # the latest run only
            assert await page.eval("Number(document.getElementById('chart').dataset.points)") == PER_RUN
            await page.eval(SET.format(id="f-run", value=RUNS[1]))
            await page.wait_for(LOADED)
            assert await page.eval("imx.rows.length") == 2 * PER_RUN
            assert await page.eval("imx.filtered().every((r) => r.run_id === " + repr(RUNS[1]) + ")")
            # compare loads both of its runs
            await page.eval("document.querySelector('nav button[data-view=compare]').click()")
            await page.eval(SET.format(id="cmp-base", value=RUNS[0]))
            await page.wait_for(LOADED)
            assert await page.eval("Number(document.getElementById('cmp').dataset.rows)") == PER_RUN
            # the trend of a configuration: its chunk, every run in it
            await page.eval("document.querySelector('#cmp button[data-trend]').click()")
            await page.wait_for(LOADED)
            await page.wait_for("document.getElementById('trend-charts').dataset.key !== undefined")
            assert f"{len(RUNS)} runs measured" in await page.eval(
                "document.getElementById('trend-info').textContent")
            # all runs on the chart: every chunk
            await page.eval("document.querySelector('nav button[data-view=chart]').click()")
            await page.eval(SET.format(id="f-run", value="__all__"))
            await page.wait_for(LOADED)
            assert await page.eval("imx.rows.length") == len(RUNS) * PER_RUN
            assert await page.eval("Number(document.getElementById('chart').dataset.points)") == len(RUNS) * PER_RUN
            assert await page.eval("document.getElementById('loading').hidden")
            assert page.errors == []

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_a_report_written_again_leaves_no_stale_chunk(tmp_path: Path) -> None:
    index = _site(tmp_path)
    again = _site(tmp_path / "again", RUNS[:2])
    assert not (again.parent / DATA_FOLDER / "run-2.js").exists()
    small = build_report([], index.parent, plots=False)["dashboard"]  # over the lazy one
    assert not (small.parent / DATA_FOLDER).exists()
