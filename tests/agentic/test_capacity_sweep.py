"""`infermatrix sweep --virtual` on a sweep whose entry names a fixed and an agentic workload:
one levels job and one capacity job, both run, collected and reported like any job."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from imx_support.headless import open_page

from infermatrix.cli import main
from infermatrix.results import agentic

SWEEP = """
description: levels and capacity in one entry
entries:
  - recipes: [llama-3.1-70b-instruct/mi300x-vllm-fp8]
    workloads: [smoke-1k-128, agentic-tiny]
    concurrency: [1, 4]
    capacity: {start: 4, max_concurrency: 1024, resolution: 16}
"""


def test_sweep_runs_levels_and_capacity_jobs(catalog_copy: Path, tmp_path: Path, chromium: str,
                                             add_agentic_workload) -> None:  # noqa: ANN001
    add_agentic_workload("agentic-tiny", tier=("FAST", 50, 1), duration_s=20, warmup_s=5,
                         sessions=16, turns=4, system_prompt_tokens=512, user_tokens=64,
                         output_tokens=32, tool_delay_s=0.5)
    (catalog_copy / "matrix" / "sweeps" / "mixed.yaml").write_text(SWEEP)
    out = tmp_path / "results"
    assert main(["sweep", "mixed", "--virtual", "--root", str(catalog_copy), "--output-dir",
                 str(out), "--run-id", "mix1"]) == 0
    run = json.loads((out / "mix1" / "run.json").read_text())
    # vLLM's --max-num-seqs ${CONC}: one job per level, and one capacity job
    assert [j["status"] for j in run["jobs"]] == ["ok", "ok", "ok"]
    manifests = [json.loads(p.read_text()) for p in (out / "mix1" / "jobs").glob("*/manifest.json")]
    levels = sorted(lv["concurrency"] for m in manifests if m["job"]["measurement"]["kind"] == "levels"
                    for lv in m["levels"])
    assert levels == [1, 4]
    (cap,) = [m for m in manifests if m["job"]["measurement"]["kind"] == "capacity"]
    assert cap["launcher"] == "virtual" and cap["capacity"]["file"] == "capacity.json"
    (rec,) = agentic.load_documents([out / "mix1"])
    assert rec.simulated is True and rec.tier == "FAST" and rec.bounded
    assert rec.passing_concurrency >= 4 and rec.first_failing - rec.passing_concurrency <= 16
    # the report stage ran over both kinds: the sweep's own dashboard shows the capacity search
    assert (out / "mix1" / "index.html").is_file()
    asyncio.run(_dashboard_shows_the_search(chromium, out / "mix1" / "index.html", rec))


def test_capacity_search_in_a_worker_records_what_this_process_finds(
        catalog_copy: Path, tmp_path: Path, capsys, add_agentic_workload) -> None:  # noqa: ANN001
    """With workers, a virtual sweep runs its capacity searches in them, ahead of recording:
    the same levels, the same tiers, and the search's lines still reach the log."""
    add_agentic_workload("agentic-tiny", tier=("FAST", 50, 1), duration_s=20, warmup_s=5,
                         sessions=16, turns=4, system_prompt_tokens=512, user_tokens=64,
                         output_tokens=32, tool_delay_s=0.5)
    (catalog_copy / "matrix" / "sweeps" / "mixed.yaml").write_text(SWEEP)
    docs, logs = {}, {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        assert main(["sweep", "mixed", "--virtual", "--root", str(catalog_copy), "--output-dir",
                     str(out), "--run-id", "r", "--workers", str(workers)]) == 0
        (path,) = (out / "r" / "jobs").glob("*/capacity.json")
        docs[workers] = json.loads(path.read_text())
        logs[workers] = capsys.readouterr().err
    one, two = docs[1], docs[2]

    def measured(doc: dict) -> list:
        return [(lv["concurrency"], lv["p25_output_speed"], lv["p95_ttft_ms"], lv["completed"])
                for lv in doc["levels"]]

    assert measured(one) == measured(two) and len(measured(one)) >= 3
    assert [t["passing_concurrency"] for t in one["tiers"]] == [
        t["passing_concurrency"] for t in two["tiers"]]
    assert one["infermatrix"]["run_id"] == two["infermatrix"]["run_id"] == "r"
    for workers in (1, 2):  # each searched level's line, then the tier's
        assert logs[workers].count("agents=") == len(measured(one)), logs[workers][-2000:]
        assert "FAST: " in logs[workers]


async def _dashboard_shows_the_search(chromium: str, page_path: Path, rec) -> None:  # noqa: ANN001
    rows = "Array.from(document.querySelectorAll('#agentic table.agentic tbody tr'))"
    async with open_page(chromium, height=1000) as page:
        await page.goto(page_path.as_uri())
        await page.wait_for("document.body.dataset.ready === '1'")
        await page.eval("document.querySelector('nav button[data-view=agentic]').click()")
        assert await page.eval("!document.getElementById('view-agentic').hidden")
        shown = await page.eval(
            rows + ".map(tr => [tr.dataset.recipe, tr.querySelector("
            "'td[data-tier=\"FAST\"][data-metric=\"agents\"]').textContent])")
        assert shown == [[rec.recipe, f"{rec.passing_concurrency:,}"]]


def test_aa_agentperf_sweep_plans_the_six_published_configurations(repo_root: Path) -> None:
    from infermatrix.catalog.loader import load_catalog
    from infermatrix.plan.jobs import plan_sweep

    cat = load_catalog(repo_root)
    jobs = plan_sweep(cat, "aa-agentperf")
    assert sorted(j.recipe for j in jobs) == sorted(
        r for r, recipe in cat.recipes.items() if "aa-agentperf" in recipe.tags)
    assert len(jobs) == 6
    assert {j.capacity.sessions.max_context_tokens for j in jobs} == {128000, 32768}
    for job in jobs:
        m = job.capacity
        assert m is not None and job.concurrency == [] and job.evals == []
        assert [(t.name, t.min_output_speed, t.max_ttft_s) for t in m.tiers] == [
            ("SLO20", 20, 10), ("SLO60", 60, 5)]  # AA-AgentPerf's published tiers
        # an agent keeps within what its server takes: the workload's 128K, or the recipe's
        # shorter context (MI355X ctx32k: 32,768)
        limit = min(128000, cat.recipes[job.recipe].max_model_len or 128000)
        assert m.sessions.source == "synthetic" and m.sessions.max_context_tokens == limit
        assert job.fingerprint != next(j for j in jobs if j is not job).fingerprint
