"""The dashboard in Debian's headless Chromium: no console errors, the right number of points,
filters that change it, a tooltip with working links, the table and compare views, and a
screenshot saved under test-artifacts/.

Skips when no Chromium is installed, except under CI (CI=true), where it fails instead.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from browser_helpers import SET
from imx_support.headless import open_page
from imx_support.synthetic import SynthJob, write_job

from infermatrix.report import build_report
from infermatrix.results import collect
from infermatrix.results.store import Store

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
RUNS = ("20261120T011700Z-aaaaaa", "20261121T011700Z-bbbbbb", "20261122T011700Z-cccccc")
LEVELS = (1, 2, 4, 8, 16, 32)
JOBS = [SynthJob(hardware=hw, engine=eng, tp=tp, variant=v, concurrency=LEVELS, speed=s)
        for hw, eng, tp, v, s in (("H200", "sglang", 8, "", 1.0), ("H200", "vllm", 8, "", 0.9),
                                  ("B200", "sglang", 8, "", 1.8), ("B200", "trtllm", 4, "tp4", 1.6),
                                  ("H100", "vllm", 8, "", 0.7))]
OTHER_MODEL = SynthJob(model="llama-3.3-70b", concurrency=LEVELS)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history")
    store = root / "history.sqlite"
    for i, run in enumerate(RUNS):
        latest = i == len(RUNS) - 1
        for job in JOBS:
            # in the latest run B200/sglang got slower, and H100's largest level failed
            if latest and job.hardware == "B200" and job.engine == "sglang":
                job = dataclasses.replace(job, speed=1.2)
            failed = (32,) if latest and job.hardware == "H100" else ()
            write_job(root / "runs" / run, job, failed_levels=failed)
        write_job(root / "runs" / run, OTHER_MODEL)
        collect([root / "runs" / run], store=store)
    with Store(store) as db:
        records, raw = db.records(), db.raw_all()
    out = root / "site"
    launch = {job.recipe: [{"name": "both-0", "role": "both",
                            "command": f"python3 -m sglang.launch_server --tp {job.tp} # {job.recipe}"}]
              for job in JOBS}
    build_report(records, out, raw=raw, title="browser test", plots=False, launch=launch)
    return out


POINTS = "Number(document.getElementById('chart').dataset.points)"


def test_dashboard_in_headless_chromium(chromium: str, site: Path) -> None:
    async def scenario() -> None:
        async with open_page(chromium) as page:
            await page.goto((site / "index.html").as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            # opens on the latest run, on its most measured model and workload, failed levels hidden
            assert await page.eval("document.getElementById('f-run').value") == RUNS[-1]
            assert await page.eval("document.getElementById('f-model').value") == "deepseek-r1-0528"
            assert await page.eval(POINTS) == len(JOBS) * len(LEVELS) - 1
            assert await page.eval("Number(document.getElementById('chart').dataset.frontier)") >= 2
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(ARTIFACTS / "dashboard.png")

            await page.eval(SET.format(id="f-hardware", value="B200"))
            assert await page.eval(POINTS) == 2 * len(LEVELS)
            await page.eval(SET.format(id="f-engine", value="trtllm"))
            assert await page.eval(POINTS) == len(LEVELS)
            await page.eval("document.getElementById('f-failed').click()")
            await page.eval(SET.format(id="f-hardware", value="H100"))
            await page.eval(SET.format(id="f-engine", value="__all__"))
            assert await page.eval(POINTS) == len(LEVELS)  # the failed level is shown now
            await page.eval(SET.format(id="f-run", value="__all__"))
            assert await page.eval(POINTS) == len(RUNS) * len(LEVELS)
            await page.eval(SET.format(id="f-run", value=RUNS[-1]))
            await page.eval("document.getElementById('f-failed').click()")
            await page.eval(SET.format(id="f-hardware", value="__all__"))

            # hover the first point: the tooltip names the configuration and links to it
            box = await page.eval("(() => { const b = document.getElementById('chart').getBoundingClientRect();"
                                  " const p = imx.chart.pts[0]; return [b.left + p.px, b.top + p.py, p.r.recipe]; })()")
            await page.send("Input.dispatchMouseEvent", type="mouseMoved", x=box[0], y=box[1])
            await page.wait_for("!document.getElementById('tip').hidden")
            links = await page.eval("Array.from(document.querySelectorAll('#tip a')).map(a => a.href)")
            assert links[0].endswith("catalog.html#" + box[2])
            raw = Path(unquote(urlparse(links[1]).path))
            assert raw.is_file() and raw.is_relative_to(site)
            # a click pins it and shows the full launch command from the catalog JSON
            for kind in ("mousePressed", "mouseReleased"):
                await page.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left",
                                clickCount=1)
            await page.wait_for("!document.getElementById('detail').hidden")
            detail = await page.eval("document.querySelector('#detail pre.cmd').textContent")
            assert detail.endswith("# " + box[2]) and "--tp" in detail
            assert await page.eval("imx.slug('deepseek-r1-0528/h200-sglang-fp8')") == "deepseek-r1-0528h200-sglang-fp8"

            await page.eval("document.querySelector('nav button[data-view=table]').click()")
            assert await page.eval("Number(document.getElementById('table').dataset.rows)") == len(JOBS) * len(LEVELS) - 1
            await page.eval("document.querySelector('nav button[data-view=compare]').click()")
            info = await page.eval("document.getElementById('cmp-info').textContent")
            # B200/sglang slower at every level, H100 c32 now failing
            assert info.startswith(f"{len(JOBS) * len(LEVELS)} configurations · {len(LEVELS) + 1} regressions"), info
            await page.screenshot(ARTIFACTS / "compare.png")

            await page.eval("document.getElementById('theme').click()")
            await page.eval("document.querySelector('nav button[data-view=chart]').click()")
            assert await page.eval("document.documentElement.dataset.theme") in ("dark", "light")
            await page.screenshot(ARTIFACTS / "dashboard-other-theme.png")
            assert page.errors == []

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert (ARTIFACTS / "dashboard.png").read_bytes().startswith(b"\x89PNG")


def test_an_empty_run_still_opens_cleanly(chromium: str, tmp_path: Path) -> None:
    """A sweep whose every job failed before serving has no level: the page says so, no errors."""
    out = tmp_path / "empty"
    build_report([], out, plots=False)

    async def scenario() -> None:
        async with open_page(chromium) as page:
            await page.goto((out / "index.html").as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            assert await page.eval(POINTS) == 0
            for view in ("table", "compare", "trend", "chart"):
                await page.eval(f"document.querySelector('nav button[data-view={view}]').click()")
            assert page.errors == []

    asyncio.run(asyncio.wait_for(scenario(), 60))
