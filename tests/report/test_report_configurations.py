"""Configurations stay apart: TP4 and TP8 of one hardware × engine, aggregated and
disaggregated, each its own series (line style, hollow markers, a legend entry naming recipe and
parallelism); colours and markers fixed per hardware and engine on every page; the per-GPU
basis of disaggregated figures said where shown; cost on a log axis when it spans decades; the
compare view sorts concurrency as a number and never compares a run with itself."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from browser_helpers import SET, embedded
from imx_support.headless import open_page
from imx_support.synthetic import SynthJob, write_job

from infermatrix.report import build_report
from infermatrix.report.plots import view_figure
from infermatrix.report.style import THEMES, colour, colours, marker, markers
from infermatrix.results import collect

LEVELS = (2, 16, 128)  # as text "128" < "16" < "2"
H200 = (SynthJob(concurrency=LEVELS), SynthJob(tp=4, variant="tp4", concurrency=LEVELS, speed=0.8),
        SynthJob(prefill_tp=4, variant="disagg", concurrency=LEVELS, speed=1.3))
B200 = SynthJob(hardware="B200", engine="vllm", concurrency=LEVELS, speed=1.6)
RUNS = ("20261120T011700Z-aaaaaa", "20261121T011700Z-bbbbbb")


def _records(root: Path, runs: tuple[str, ...], jobs: tuple[SynthJob, ...]) -> list:
    for run in runs:
        for job in jobs:
            write_job(root / run, job)
    return collect([root / run for run in runs]).records


def test_colours_and_markers_do_not_depend_on_what_is_shown() -> None:
    assert colours(["H200"])["H200"] == colours(["A100", "B200", "H200", "MI355X"])["H200"]
    assert markers(["vllm"])["vllm"] == markers(["sglang", "trtllm", "vllm"])["vllm"] == marker("vllm")
    assert len({colour(hw) for hw in ("H200", "B200", "H100", "MI355X", "B300", "MI300X")}) == 6
    assert colour("Some-New-GPU") == colour("some-new-gpu")  # hashed, stable across runs


def test_plots_split_configurations_and_log_the_cost_axis(tmp_path: Path) -> None:
    recs = _records(tmp_path, RUNS[:1], (*H200, B200))
    fig = view_figure(recs, "throughput-vs-interactivity", THEMES["light"])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(labels) == sorted(["h200-sglang-fp8 · tp8", "h200-sglang-fp8-tp4 · tp4",
                                     "h200-sglang-fp8-disagg · P 1×tp4 + D 1×tp8",
                                     "b200-vllm-fp8 · tp8"])
    lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert lines["h200-sglang-fp8-disagg · P 1×tp4 + D 1×tp8"].get_markerfacecolor() == "none"
    svg = tmp_path / "fig.svg"
    fig.savefig(svg)  # as the reader sees them: H200's three frontiers in three line styles
    h200 = re.findall(r'style="fill: none; stroke-dasharray: ([^;]+); [^"]*stroke: #0072b2',
                      svg.read_text())
    assert len(set(h200)) == 3, h200
    assert any("decode GPU" in t.get_text() for t in fig.texts)  # the per-GPU basis, explained
    cost = view_figure(recs, "cost-vs-interactivity", THEMES["light"])
    assert cost.axes[0].get_yscale() == "log"
    assert view_figure(recs, "throughput-vs-interactivity", THEMES["light"]).axes[0].get_yscale() == "linear"


def test_dashboard_tells_configurations_apart(chromium: str, tmp_path: Path) -> None:
    one = build_report(_records(tmp_path / "one", RUNS[:1], H200), tmp_path / "one-site",
                       plots=False)["dashboard"]
    two = build_report(_records(tmp_path / "two", RUNS, (*H200, B200)), tmp_path / "two-site",
                       plots=False)["dashboard"]
    assert embedded(one)["hw_colours"]["H200"] == embedded(two)["hw_colours"]["H200"]
    assert embedded(one)["engine_markers"]["sglang"] == embedded(two)["engine_markers"]["sglang"]

    async def scenario() -> None:
        async with open_page(chromium) as page:
            await page.goto(one.as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            series = await page.eval("Array.from(document.querySelectorAll('#legend .series'))"
                                     ".map((s) => s.dataset.series)")
            assert sorted(series) == sorted(["h200-sglang-fp8 · tp8", "h200-sglang-fp8-tp4 · tp4",
                                             "h200-sglang-fp8-disagg · P 1×tp4 + D 1×tp8"])
            dashes = await page.eval("Array.from(document.querySelectorAll('#legend .series path'))"
                                     ".map((p) => p.getAttribute('stroke-dasharray'))")
            assert len(set(dashes)) == 3  # same colour, three line styles
            note = "document.getElementById('pergpu-note')"
            assert not await page.eval(f"{note}.hidden")
            assert "per decode GPU" in await page.eval(f"{note}.textContent")
            assert not await page.eval("document.getElementById('c-logy').checked")
            await page.eval(SET.format(id="c-y", value="usd_per_m_output_tokens"))
            assert await page.eval("document.getElementById('c-logy').checked")
            assert await page.eval(f"{note}.hidden")  # cost is per deployment, not per GPU
            await page.eval("document.querySelector('nav button[data-view=compare]').click()")
            assert await page.eval("document.getElementById('cmp').dataset.rows") == "0"
            assert "Only one run" in await page.eval("document.getElementById('cmp-info').textContent")
            assert page.errors == []

            await page.goto(two.as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            await page.eval("document.querySelector('nav button[data-view=compare]').click()")
            assert await page.eval("document.getElementById('cmp-base').value") == RUNS[0]
            conc = await page.eval("Array.from(document.querySelectorAll('#cmp tr')).slice(1)"
                                   ".map((tr) => [tr.cells[0].textContent, Number(tr.cells[2].textContent)])")
            assert len(conc) == 4 * len(LEVELS)
            for i in range(0, len(conc), len(LEVELS)):
                assert [c for _, c in conc[i:i + len(LEVELS)]] == list(LEVELS)
            await page.eval(SET.format(id="cmp-base", value=RUNS[1]))
            assert "same run" in await page.eval("document.getElementById('cmp-info').textContent")
            assert page.errors == []

    asyncio.run(asyncio.wait_for(scenario(), 120))
