"""Simulated numbers are never mistaken for measured ones: plots (PNG and SVG, pareto.png)
carry a "SIMULATED" stamp, a watermark and file metadata; the dashboard badges simulated runs,
points and rows (checked in headless Chromium); the job summary says so in its first line.
A measured run shows none of it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from browser_helpers import SET
from imx_support.headless import open_page
from imx_support.synthetic import SynthJob, write_job
from PIL import Image

from infermatrix.report import build_report
from infermatrix.report.plots import view_figure
from infermatrix.report.style import THEMES
from infermatrix.report.summary import job_summary
from infermatrix.results import collect
from infermatrix.results.records import Record

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
MEASURED_RUN, SIMULATED_RUN = "20261120T011700Z-aaaaaa", "20261121T011700Z-bbbbbb"
LEVELS = (1, 4, 16, 64)
JOBS = (SynthJob(hardware="H200", engine="sglang", concurrency=LEVELS),
        SynthJob(hardware="B200", engine="vllm", concurrency=LEVELS, speed=1.7))


def _records(root: Path, run: str, simulated: bool) -> list[Record]:
    for job in JOBS:
        write_job(root / run, SynthJob(**{**job.__dict__, "simulated": simulated}))
    return collect([root / run]).records


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Record]]:
    root = tmp_path_factory.mktemp("runs")
    return {"measured": _records(root, MEASURED_RUN, False),
            "simulated": _records(root, SIMULATED_RUN, True)}


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]


def test_a_plot_of_simulated_results_is_stamped_and_a_measured_one_is_not(runs) -> None:
    sim = view_figure(runs["simulated"], "throughput-vs-interactivity", THEMES["light"])
    texts = _texts(sim)
    assert "SIMULATED · real time: not measured on hardware" in texts  # the corner stamp
    assert texts.count("SIMULATED") >= 1  # the watermark of the panel
    assert any(t.endswith("(simulated)") for t in texts)  # the title
    mixed = view_figure(runs["simulated"][:3] + runs["measured"], "throughput-vs-interactivity",
                        THEMES["dark"])
    assert any(t.startswith("PARTLY SIMULATED: 3 of ") and "real time" in t for t in _texts(mixed))
    real = view_figure(runs["measured"], "throughput-vs-interactivity", THEMES["light"])
    assert not any("SIMULATED" in t.upper() for t in _texts(real))


def test_report_files_of_a_simulated_run_carry_the_mark(runs, tmp_path: Path) -> None:
    out = build_report(runs["simulated"], tmp_path / "sim")
    with Image.open(out["pareto"]) as png:
        assert png.text.get("Description") == "SIMULATED · real time: not measured on hardware"
    for svg in (tmp_path / "sim" / "plots").glob("*.svg"):
        text = svg.read_text()
        assert "SIMULATED · real time: not measured on hardware" in text, svg.name
    assert out["summary"].read_text().splitlines()[0] == (
        "## infermatrix results · SIMULATED: simulated engine in real time, not measured on "
        "hardware")
    real = build_report(runs["measured"], tmp_path / "real")
    with Image.open(real["pareto"]) as png:
        assert "Description" not in png.text
    assert real["summary"].read_text().splitlines()[0] == "## infermatrix results"


def test_the_summary_of_a_mixed_run_says_how_much_was_simulated(runs) -> None:
    first = job_summary(runs["measured"] + runs["simulated"][:2]).splitlines()[0]
    total = len(runs["measured"]) + 2
    assert first == (f"## infermatrix results · PARTLY SIMULATED: 2 of {total} results from the "
                     "simulated engine in real time, not measured on hardware")


def test_the_dashboard_badges_simulated_runs_points_and_rows(chromium: str, runs,
                                                             tmp_path: Path) -> None:
    out = build_report(runs["measured"] + runs["simulated"], tmp_path / "site", plots=False)
    n = len(JOBS) * len(LEVELS)

    async def scenario() -> None:
        async with open_page(chromium) as page:
            await page.goto(out["dashboard"].as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            badge = "document.getElementById('sim-badge')"
            # a simulated server (launcher "synthetic" here, not "virtual") answered in real time
            assert await page.eval(f"{badge}.textContent") == (
                f"PARTLY SIMULATED: {n} of {2 * n} · real time")
            banner = "document.getElementById('sim-banner')"
            assert (await page.eval(f"{banner}.textContent")).startswith(
                f"Partly simulated: {n} of the {2 * n} results shown come from the simulated "
                "engine in real time")
            assert await page.eval(f"{badge}.getBoundingClientRect().width > 0")
            options = await page.eval("Array.from(document.getElementById('f-run').options)"
                                      ".map(o => o.textContent)")
            assert f"{SIMULATED_RUN} · simulated" in options and MEASURED_RUN in options
            # opens on the latest run, the simulated one: every point ringed, the note says so
            assert await page.eval("document.getElementById('f-run').value") == SIMULATED_RUN
            chart = "document.getElementById('chart').dataset"
            assert await page.eval(f"{chart}.simulated") == await page.eval(f"{chart}.points") == str(n)
            note = "document.getElementById('sim-note')"
            assert not await page.eval(f"{note}.hidden")
            assert (await page.eval(f"{note}.textContent")).startswith("Simulated: every point shown")
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(ARTIFACTS / "dashboard-simulated.png")
            # the tooltip of a point names its source
            box = await page.eval("(() => { const b = document.getElementById('chart').getBoundingClientRect();"
                                  " const p = imx.chart.pts[0]; return [b.left + p.px, b.top + p.py]; })()")
            await page.send("Input.dispatchMouseEvent", type="mouseMoved", x=box[0], y=box[1])
            await page.wait_for("!document.getElementById('tip').hidden")
            assert await page.eval("document.querySelectorAll('#tip .badge.sim').length") == 1
            # all runs: half the points simulated; the measured run alone: no mark at all
            await page.eval(SET.format(id="f-run", value="__all__"))
            assert await page.eval(f"{chart}.simulated") == str(n)
            assert (await page.eval(f"{note}.textContent")).startswith(f"Partly simulated: {n} of the {2 * n}")
            await page.eval("document.querySelector('nav button[data-view=table]').click()")
            assert await page.eval("document.querySelectorAll('#table .badge.sim').length") == n
            await page.eval("document.querySelector('nav button[data-view=chart]').click()")
            await page.eval(SET.format(id="f-run", value=MEASURED_RUN))
            assert await page.eval(f"{chart}.simulated") == "0"
            assert await page.eval(f"{note}.hidden")
            assert page.errors == []

    asyncio.run(asyncio.wait_for(scenario(), 90))
