"""The agentic capacity view: the static page (`write_agentic_page`, parsed), the report's
"Agentic capacity" tab and agentic.html, `infermatrix capacity --report`, and the tab in
headless Chromium (skips without it, fails without it under CI=true).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from browser_helpers import SET
from imx_support.headless import open_page
from imx_support.synthetic import SynthJob, write_job

from infermatrix.capacity import CapacitySearch, CapacitySettings, Footprint, Target
from infermatrix.capacity.run import capacity_document
from infermatrix.capacity.tiers import SLO20, SLO60
from infermatrix.client import BenchConfig
from infermatrix.client.session_sources import SyntheticSource, SyntheticSpec
from infermatrix.client.tokenizer import WordTokenizer
from infermatrix.report import build_report, build_run_report
from infermatrix.report.agentic import write_agentic_page
from infermatrix.results import agentic, collect
from infermatrix.results.store import Store

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
REPO = Path(__file__).resolve().parents[2]
OLD, NEW = "20261201T090000Z-agent1", "20261205T090000Z-agent2"
V4, QWEN = "deepseek-v4-pro", "qwen3-235b-a22b"


def config(
    recipe: str,
    hw: str,
    engine: str,
    precision: str,
    gpus: int,
    usd: float,
    slo20: int,
    slo60: int,
    power_w: float | None = None,
    *,
    model: str = V4,
    mode: str = "aggregated",
    max_c: int = 4096,
    run: str = NEW,
) -> dict[str, Any]:
    return {
        "recipe": f"{model}/{recipe}",
        "hardware": hw,
        "engine": engine,
        "precision": precision,
        "gpus": gpus,
        "usd": usd,
        "slo20": slo20,
        "slo60": slo60,
        "power_w": power_w,
        "model": model,
        "mode": mode,
        "max_c": max_c,
        "run": run,
    }


# the latest search of each configuration: 4 of DeepSeek V4 Pro, 1 of Qwen3
LATEST = [
    config(
        "b300-trtllm-nvfp4-1ctx-1gen",
        "B300",
        "trtllm",
        "nvfp4",
        16,
        8.0,
        180,
        44,
        14_000.0,
        mode="disaggregated",
    ),
    config("b200-sglang-fp8-tp8", "B200", "sglang", "fp8", 8, 6.0, 90, 21, 7_600.0),
    config("h200-vllm-fp8-tp8", "H200", "vllm", "fp8", 8, 3.5, 40, 0),
    config("mi355x-sglang-fp8-tp8", "MI355X", "sglang", "fp8", 8, 5.0, 64, 12, max_c=64),
    config("h200-sglang-fp8-tp8", "H200", "sglang", "fp8", 8, 3.5, 120, 30, model=QWEN),
]
# an earlier search of the B200 configuration, superseded by the latest
EARLIER = config("b200-sglang-fp8-tp8", "B200", "sglang", "fp8", 8, 6.0, 64, 16, 7_400.0, run=OLD)


def document(c: dict[str, Any]) -> dict[str, Any]:
    """A capacity document from the real search over a deployment whose limits are set: a level
    passes SLO60 up to ``slo60`` agents, SLO20 up to ``slo20``."""

    async def measure(n: int) -> dict[str, Any]:
        speed = 80.0 if n <= c["slo60"] else 30.0 if n <= c["slo20"] else 6.0
        return {
            "completed": 4 * n,
            "error_rate": 0.0,
            "avg_power_w": c["power_w"],
            "p25_output_speed": speed,
            "p95_ttft_ms": 800.0 + 10 * n,
            "cached_token_ratio": 0.85,
        }

    settings = CapacitySettings(max_concurrency=c["max_c"])
    result = asyncio.run(CapacitySearch(measure, [SLO20, SLO60], max_concurrency=c["max_c"]).run())
    meta = {
        "infermatrix": {
            "run_id": c["run"],
            "recipe": c["recipe"],
            "model": c["model"],
            "hardware": c["hardware"],
            "engine": c["engine"],
            "precision": c["precision"],
            "mode": c["mode"],
            "workload": "agentic-coding",
            "simulated": True,
            "time_scale": 1.0,
        }
    }
    return capacity_document(
        result,
        Footprint(gpus=c["gpus"], usd_per_gpu_hour=c["usd"]),
        settings,
        Target(BenchConfig(base_url="http://127.0.0.1:1")),
        SyntheticSource(SyntheticSpec(), WordTokenizer()),
        c["model"],
        meta,
    )


def records() -> list[agentic.AgenticRecord]:
    return [r for c in [EARLIER, *LATEST] for r in agentic.records_from_document(document(c))]


# ---------------------------------------------------------------- parse the page's tables


class Tables(HTMLParser):
    """Every ``table.agentic``: its group (model, workload) and rows of cells, each cell
    (text, attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self.group: tuple[str, str] = ("", "")
        self.cell: dict[str, Any] | None = None
        self.in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section" and "group" in a.get("class", ""):
            self.group = (a["data-model"], a["data-workload"])
        elif tag == "table" and "agentic" in a.get("class", "").split():
            self.tables.append({"group": self.group, "rows": []})
        elif tag == "tbody" and self.tables:
            self.in_body = True
        elif tag == "tr" and self.in_body:
            self.tables[-1]["rows"].append({"attrs": a, "cells": []})
        elif tag == "td" and self.in_body:
            self.cell = {"text": "", **a}
            self.tables[-1]["rows"][-1]["cells"].append(self.cell)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self.cell = None
        elif tag == "tbody":
            self.in_body = False

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell["text"] += data


def cell(row: dict[str, Any], tier: str, metric: str) -> dict[str, Any]:
    (c,) = [
        c for c in row["cells"] if c.get("data-tier") == tier and c.get("data-metric") == metric
    ]
    return c


def test_agentic_page_tables(tmp_path: Path) -> None:
    page = write_agentic_page(records(), tmp_path / "sub" / "agentic.html")
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text  # self-contained
    parser = Tables()
    parser.feed(text)
    groups = [t["group"] for t in parser.tables]
    assert groups == [(V4, "agentic-coding"), (QWEN, "agentic-coding")]
    v4 = {r["attrs"]["data-recipe"]: r for r in parser.tables[0]["rows"]}
    assert len(v4) == 4 and len(parser.tables[1]["rows"]) == 1
    # ranked by agents per GPU at the strictest tier (SLO60): 44/16, 21/8, 12/8, 0/8
    assert [r["attrs"]["data-recipe"].split("/")[1] for r in parser.tables[0]["rows"]] == [
        "b300-trtllm-nvfp4-1ctx-1gen",
        "b200-sglang-fp8-tp8",
        "mi355x-sglang-fp8-tp8",
        "h200-vllm-fp8-tp8",
    ]
    b300, b200 = v4[f"{V4}/b300-trtllm-nvfp4-1ctx-1gen"], v4[f"{V4}/b200-sglang-fp8-tp8"]
    mi, h200 = v4[f"{V4}/mi355x-sglang-fp8-tp8"], v4[f"{V4}/h200-vllm-fp8-tp8"]
    assert b200["attrs"]["data-run"] == NEW  # the latest search, not the earlier one
    for c in LATEST[:4]:
        row = v4[c["recipe"]]
        for tier in ("SLO20", "SLO60"):
            agents = cell(row, tier, "agents")["text"].removeprefix("≥ ")
            assert int(agents) == c[tier.lower()], (c["recipe"], tier)
    # best per tier and column: at SLO20 most agents and most per MW on B300 (180/14 kW against
    # 90/7.6 kW), most per $/h on B200 (90/48 $/h against 180/128), per GPU a tie (11.25)
    assert "best" in cell(b300, "SLO20", "agents")["class"]
    assert "best" not in cell(b200, "SLO20", "agents")["class"]
    assert "best" in cell(b300, "SLO20", "agents_per_mw")["class"]
    assert "best" in cell(b200, "SLO20", "agents_per_usd_hour")["class"]
    assert "best" not in cell(b300, "SLO20", "agents_per_usd_hour")["class"]
    assert all("best" in cell(r, "SLO20", "agents_per_gpu")["class"] for r in (b300, b200))
    assert "best" in cell(b300, "SLO60", "agents_per_gpu")["class"]  # 44/16 against 21/8
    assert cell(b300, "SLO20", "agents_per_gpu")["text"] == "11.3"  # 11.25, as the dashboard
    assert cell(b300, "SLO20", "agents_per_mw")["text"] == "12,857"  # 180 / 0.014 MW
    assert "12.9 agents per kW · 14 kW measured" in cell(b300, "SLO20", "agents_per_mw")["title"]
    assert cell(h200, "SLO20", "agents_per_mw")["text"] == "–"  # power not measured
    assert cell(b300, "SLO20", "first_failing")["text"] == "181"
    assert "P25 output speed 6 < 20 tok/s" in cell(b300, "SLO20", "first_failing")["title"]
    assert cell(h200, "SLO60", "agents")["text"] == "0"
    assert cell(h200, "SLO60", "first_failing")["text"] == "1"
    # the MI355X search reached its maximum (64) still passing SLO20: not bounded
    assert cell(mi, "SLO20", "agents")["text"] == "≥ 64"
    assert cell(mi, "SLO20", "first_failing")["text"] == "not bounded"
    assert "data-theme" in text or 'id="theme"' in text
    assert text.count("<details>") == 5  # the levels searched, one per configuration


def test_empty_page_says_so(tmp_path: Path) -> None:
    text = write_agentic_page([], tmp_path / "a.html").read_text()
    assert "No agentic capacity search" in text


def _embedded(index: Path) -> dict:
    blob = re.search(
        r'<script id="imx-data" type="application/json">(.*?)</script>', index.read_text(), re.S
    )
    assert blob
    return json.loads(blob.group(1))


def write_searches(root: Path, configs: list[dict[str, Any]], **identity: Any) -> Path:
    """Each search's capacity document in its capacity job's folder under ``root``; ``identity``
    overrides fields of its ``infermatrix`` block."""
    for c in configs:
        job_dir = root / c["run"] / "jobs" / c["recipe"].replace("/", ".")
        job_dir.mkdir(parents=True)
        doc = document(c)
        doc["infermatrix"].update(identity)
        (job_dir / "capacity.json").write_text(json.dumps(doc))
    return root


def history(root: Path) -> Path:
    """A store with two bench runs of DeepSeek R1 and the capacity searches above, collected
    from run folders (each search's document in its capacity job's folder)."""
    store = root / "history.sqlite"
    for run in ("20261120T011700Z-aaaaaa", "20261122T011700Z-cccccc"):
        for job in (
            SynthJob(concurrency=(1, 4, 16)),
            SynthJob(hardware="B200", concurrency=(1, 4, 16), speed=1.7),
        ):
            write_job(root / "runs" / run, job)
        collect([root / "runs" / run], store=store)
    collect([write_searches(root / "searches", [EARLIER, *LATEST])], store=store)
    with Store(store) as db:
        assert db.agentic() == sorted(records(), key=lambda r: r.key)
    return store


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_report_cli_adds_the_agentic_tab(tmp_path: Path) -> None:
    store = history(tmp_path)
    site = tmp_path / "site"
    res = cli("report", str(store), "-o", str(site), "--no-plots")
    assert res.returncode == 0, res.stderr
    assert "12 agentic capacity records" in res.stdout and "agentic:" in res.stdout
    data = _embedded(site / "index.html")
    assert [t["name"] for t in data["agentic"]["tiers"]] == ["SLO20", "SLO60"]
    assert data["agentic"]["runs"] == [OLD, NEW]
    assert sum(r["latest"] for r in data["agentic"]["rows"]) == len(LATEST)
    assert 'data-view="agentic"' in (site / "index.html").read_text()
    assert 'href="agentic.html"' in (site / "index.html").read_text()
    assert (site / "agentic.html").read_text().count('<table class="data agentic">') == 2
    summary = (site / "summary.md").read_text()
    assert "### Agentic capacity" in summary
    assert "| recipe | GPUs | SLO20 agents | SLO20 /GPU | SLO20 /MW | SLO20 /$·h | SLO60 agents" in summary
    assert (f"| {V4}/b300-trtllm-nvfp4-1ctx-1gen | 16 | 180 | 11.3 | 12,857 | 1.41 | 44 | 2.75 | "
            "3,143 | 0.34 |") in summary
    assert f"| {V4}/mi355x-sglang-fp8-tp8 | 8 | ≥ 64 | 8 | – | 1.6 | 12 | 1.5 | – | 0.3 |" in summary
    # --run names a search run: only its records (and no bench level)
    res = cli("report", str(store), "-o", str(tmp_path / "old"), "--no-plots", "--run", OLD)
    assert res.returncode == 0, res.stderr
    assert [r["run_id"] for r in _embedded(tmp_path / "old" / "index.html")["agentic"]["rows"]] == [
        OLD
    ]
    # a store without capacity results (its agentic table empty) shows no tab
    plain = tmp_path / "plain.sqlite"
    collect([tmp_path / "runs"], store=plain)
    res = cli("report", str(plain), "-o", str(tmp_path / "plain"), "--no-plots")
    assert res.returncode == 0, res.stderr
    assert 'data-view="agentic"' not in (tmp_path / "plain" / "index.html").read_text()
    assert "agentic" not in _embedded(tmp_path / "plain" / "index.html")
    assert not (tmp_path / "plain" / "agentic.html").exists()
    with Store(plain) as db:
        assert db.count("agentic") == 0


def test_run_report_writes_agentic_html(tmp_path: Path) -> None:
    run = tmp_path / "20261205T090000Z-agent2"
    write_job(run, SynthJob(concurrency=(1, 2)))
    (run / "capacity").mkdir()
    for i, c in enumerate(LATEST[:2]):
        (run / "capacity" / f"cap-{i}.json").write_text(json.dumps(document(c)))
    out = build_run_report(run, plots=False)
    assert out["agentic"] == run / "agentic.html"
    parser = Tables()
    parser.feed(out["agentic"].read_text())
    assert [len(t["rows"]) for t in parser.tables] == [2]
    assert len(_embedded(out["dashboard"])["agentic"]["rows"]) == 2
    again = build_run_report(run, plots=False)  # its own output is not mistaken for results
    assert len(_embedded(again["dashboard"])["agentic"]["rows"]) == 2


def test_capacity_only_run_summary_counts_its_results(tmp_path: Path) -> None:
    run = tmp_path / "20261205T090000Z-agent3"
    (run / "capacity").mkdir(parents=True)
    for i, c in enumerate(LATEST[2:4]):  # H200 40/0 agents, MI355X ≥ 64 (not bounded)/12
        (run / "capacity" / f"cap-{i}.json").write_text(json.dumps(document(c)))
    lines = build_run_report(run, plots=False)["summary"].read_text().splitlines()
    assert lines[0].startswith("## infermatrix results · SIMULATED")
    assert lines[2] == (f"4 capacity results (one per SLO tier, 1 not bounded) from 2 jobs in "
                        f"1 run(s): {NEW}.")
    assert "### Best configuration" not in "\n".join(lines)  # no throughput level: no table


def test_capacity_cli_writes_the_page(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "tests" / "agentic"))
    from agentic_servers import HERE, Server, free_port

    port = free_port()
    srv = Server(
        [sys.executable, str(HERE / "imx_limit_server.py"), "--port", str(port), "--limit", "3"],
        port,
    )
    try:
        page = tmp_path / "page.html"
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "infermatrix.cli",
                "capacity",
                "--base-url",
                srv.base_url,
                "--gpus",
                "2",
                "--usd-per-gpu-hour",
                "3",
                "--tier",
                "T=80:1",
                *[
                    a
                    for d in (
                        "turns=4",
                        "system_prompt_tokens=10",
                        "user_tokens=5",
                        "output_tokens=8",
                        "tool_delay_s=0",
                    )
                    for a in ("--synthetic", d)
                ],
                "--duration",
                "0.5",
                "--warmup",
                "0.1",
                "--max-concurrency",
                "8",
                "-o",
                str(tmp_path / "cap.json"),
                "--report",
                str(page),
                "--quiet",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
    finally:
        srv.stop()
    assert res.returncode == 0, res.stderr
    parser = Tables()
    parser.feed(page.read_text())
    (table,) = parser.tables
    (row,) = table["rows"]
    passing = json.loads((tmp_path / "cap.json").read_text())["tiers"][0]["passing_concurrency"]
    assert 2 <= passing <= 3
    assert cell(row, "T", "agents")["text"] == str(passing)
    assert cell(row, "T", "agents_per_gpu")["text"] == f"{passing / 2:g}"


# ---------------------------------------------------------------- headless Chromium


ROWS = "document.querySelectorAll('#agentic table.agentic tbody tr').length"
AGENTS = (
    "Array.from(document.querySelectorAll('#agentic table.agentic tbody tr'))"
    ".map(tr => [tr.dataset.recipe, "
    'tr.querySelector(\'td[data-tier="{tier}"][data-metric="agents"]\').textContent])'
)

# a group's "best per SLO tier" table: tier -> metric -> [value, recipe]
HEADLINE = (
    "Object.fromEntries(Array.from(document.querySelectorAll("
    "'#agentic section.group[data-model=\"{model}\"] table.ag-best tbody tr'))"
    ".map(tr => [tr.dataset.tier, Object.fromEntries(Array.from(tr.querySelectorAll('td[data-metric]'))"
    ".map(td => [td.dataset.metric, [td.firstChild.textContent.trim(), td.dataset.recipe || null]]))]))"
)


def test_agentic_tab_in_headless_chromium(chromium: str, tmp_path: Path) -> None:
    store = history(tmp_path)
    with Store(store) as db:
        bench, raw = db.records(), db.raw_all()
    site = tmp_path / "site"  # the dashboard as `report` writes it from the store
    res = cli("report", str(store), "-o", str(site), "--no-plots", "--title", "agentic browser test")
    assert res.returncode == 0, res.stderr
    plain = tmp_path / "plain"
    build_report(bench, plain, raw=raw, plots=False)

    async def scenario() -> None:
        async with open_page(chromium, height=1000) as page:
            await page.goto((plain / "index.html").as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            assert (
                await page.eval("document.querySelector('nav button[data-view=agentic]')") is None
            )

            await page.goto((site / "index.html").as_uri())
            await page.wait_for("document.body.dataset.ready === '1'")
            tabs = await page.eval(
                "Array.from(document.querySelectorAll('nav button[data-view]'))"
                ".map(b => b.textContent)"
            )
            assert tabs == ["Chart", "Table", "Compare runs", "Trend", "Agentic capacity"]
            bench_points = await page.eval(
                "Number(document.getElementById('chart').dataset.points)"
            )
            assert bench_points == 6  # the chart still opens on the bench levels
            await page.eval("document.querySelector('nav button[data-view=agentic]').click()")
            assert await page.eval("!document.getElementById('view-agentic').hidden")
            assert await page.eval("document.getElementById('view-chart').hidden")
            assert await page.eval(ROWS) == len(LATEST)
            assert await page.eval("document.getElementById('agentic').dataset.groups") == "2"
            # the filters show the searches' values, failed levels do not apply
            models = await page.eval(
                "Array.from(document.getElementById('f-model').options).map(o => o.value)"
            )
            assert models == ["__all__", V4, QWEN]
            assert await page.eval("document.getElementById('f-failed').disabled")
            got = dict(await page.eval(AGENTS.format(tier="SLO20")))
            assert got == {
                c["recipe"]: ("≥ " if c["max_c"] == c["slo20"] else "") + str(c["slo20"])
                for c in LATEST
            }
            got60 = dict(await page.eval(AGENTS.format(tier="SLO60")))
            assert got60 == {c["recipe"]: str(c["slo60"]) for c in LATEST}
            best = await page.eval(
                "Array.from(document.querySelectorAll('#agentic td.best[data-metric=agents]'))"
                ".map(td => td.closest('tr').dataset.recipe + ' ' + td.dataset.tier)"
            )
            assert sorted(best) == [
                f"{V4}/b300-trtllm-nvfp4-1ctx-1gen SLO20",
                f"{V4}/b300-trtllm-nvfp4-1ctx-1gen SLO60",
            ]
            # per SLO tier of each group: the most agents per GPU, per MW and per $·h, and where
            assert await page.eval(HEADLINE.format(model=V4)) == {
                "SLO20": {"agents_per_gpu": ["11.3", f"{V4}/b300-trtllm-nvfp4-1ctx-1gen"],
                          "agents_per_mw": ["12,857", f"{V4}/b300-trtllm-nvfp4-1ctx-1gen"],
                          "agents_per_usd_hour": ["1.88", f"{V4}/b200-sglang-fp8-tp8"]},
                "SLO60": {"agents_per_gpu": ["2.75", f"{V4}/b300-trtllm-nvfp4-1ctx-1gen"],
                          "agents_per_mw": ["3,143", f"{V4}/b300-trtllm-nvfp4-1ctx-1gen"],
                          "agents_per_usd_hour": ["0.44", f"{V4}/b200-sglang-fp8-tp8"]},
            }
            qwen = await page.eval(HEADLINE.format(model=QWEN))
            assert qwen["SLO20"]["agents_per_mw"] == ["–", None]  # its power was not measured
            assert qwen["SLO60"]["agents_per_gpu"] == ["3.75", f"{QWEN}/h200-sglang-fp8-tp8"]
            per_mw = await page.eval(
                "document.querySelector('#agentic table.agentic td[data-metric=agents_per_mw]')"
                ".title")
            assert "agents per kW" in per_mw and "kW measured" in per_mw
            ARTIFACTS.mkdir(exist_ok=True)
            await page.screenshot(ARTIFACTS / "dashboard-agentic.png")

            # model filter; an earlier search run; the levels of a configuration
            await page.eval(SET.format(id="f-model", value=V4))
            assert await page.eval(ROWS) == 4
            await page.eval(SET.format(id="f-hardware", value="H200"))
            assert await page.eval(ROWS) == 1
            await page.eval(SET.format(id="f-hardware", value="__all__"))
            await page.eval(SET.format(id="f-run", value=OLD))
            assert dict(await page.eval(AGENTS.format(tier="SLO20"))) == {EARLIER["recipe"]: "64"}
            await page.eval(SET.format(id="f-run", value="__all__"))
            await page.eval("document.querySelector('#agentic table.agentic tbody tr').click()")
            await page.wait_for("!document.getElementById('ag-detail').hidden")
            detail = await page.eval("document.getElementById('ag-detail').textContent")
            assert "Levels searched" in detail and "✗ P25 output speed" in detail
            # sort by SLO20 agents (descending): B300 first
            await page.eval(
                "document.querySelector("
                "'#agentic th[data-sort-tier=SLO20][data-sort-metric=agents]').click()"
            )
            assert (await page.eval(AGENTS.format(tier="SLO20")))[0][1] == "180"

            # back to the chart: its own filters again
            await page.eval("document.querySelector('nav button[data-view=chart]').click()")
            assert await page.eval("document.getElementById('f-model').value") == "deepseek-r1-0528"
            assert (
                await page.eval("Number(document.getElementById('chart').dataset.points)")
                == bench_points
            )
            assert not await page.eval("document.getElementById('f-failed').disabled")
            await page.eval("document.getElementById('theme').click()")
            await page.eval("document.querySelector('nav button[data-view=agentic]').click()")
            assert await page.eval(ROWS) == 4  # the agentic selection was kept (model V4)
            await page.screenshot(ARTIFACTS / "dashboard-agentic-other-theme.png")

            # index.html#agentic opens on the tab; the static page loads cleanly too
            await page.goto("about:blank")
            await page.goto((site / "index.html").as_uri() + "#agentic")
            await page.wait_for("document.body.dataset.ready === '1'")
            assert await page.eval("!document.getElementById('view-agentic').hidden")
            await page.goto((site / "agentic.html").as_uri())
            assert await page.eval(
                "document.querySelectorAll('table.agentic tbody tr').length"
            ) == len(LATEST)
            await page.screenshot(ARTIFACTS / "agentic-page.png")
            assert page.errors == []

    asyncio.run(asyncio.wait_for(scenario(), 90))
    assert (ARTIFACTS / "dashboard-agentic.png").read_bytes().startswith(b"\x89PNG")
