"""Every record kind through the one store, as CI runs the commands: throughput levels, capacity
results (capacity documents written into job folders) and eval records, collected by
`infermatrix collect` into one history store, then read back by `compare` and `report`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from imx_support.synthetic import SynthJob, level_result, write_job

from infermatrix.capacity import CapacitySearch, CapacitySettings, Footprint, Target
from infermatrix.capacity.run import capacity_document
from infermatrix.capacity.tiers import SLO20, SLO60
from infermatrix.client import BenchConfig
from infermatrix.client.session_sources import SyntheticSource, SyntheticSpec
from infermatrix.client.tokenizer import WordTokenizer
from infermatrix.evals.publish import run_gate
from infermatrix.evals.record import EvalRecord, document, file_name
from infermatrix.report import build_run_report
from infermatrix.results.store import Store

REPO = Path(__file__).resolve().parents[2]
OLD, NEW = "20261201T000000Z-kinds1", "20261202T000000Z-kinds2"
CAP_RECIPE = "deepseek-v4-pro/b300-trtllm-nvfp4"
CAP_JOB = "deepseek-v4-pro.b300-trtllm-nvfp4.agentic-coding.b300-synth-0123abcd"


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infermatrix.cli", *args], capture_output=True,
                          text=True, timeout=180, check=False, cwd=cwd)


def capacity(run_id: str, slo20: int, slo60: int) -> dict[str, Any]:
    """The document a capacity job writes: the real search over a deployment that passes SLO60
    up to ``slo60`` agents and SLO20 up to ``slo20``, on 16 GPUs at 14 kW and $8/GPU-hour."""

    async def measure(n: int) -> dict[str, Any]:
        speed = 80.0 if n <= slo60 else 30.0 if n <= slo20 else 6.0
        return {"completed": 4 * n, "error_rate": 0.0, "avg_power_w": 14_000.0,
                "p25_output_speed": speed, "p95_ttft_ms": 900.0, "cached_token_ratio": 0.8}

    result = asyncio.run(CapacitySearch(measure, [SLO20, SLO60], max_concurrency=512).run())
    meta = {"infermatrix": {"run_id": run_id, "job_id": CAP_JOB, "recipe": CAP_RECIPE,
                            "model": "deepseek-v4-pro", "hardware": "B300", "engine": "trtllm",
                            "precision": "nvfp4", "workload": "agentic-coding", "simulated": True}}
    return capacity_document(result, Footprint(gpus=16, usd_per_gpu_hour=8.0),
                             CapacitySettings(max_concurrency=512),
                             Target(BenchConfig(base_url="http://127.0.0.1:1")),
                             SyntheticSource(SyntheticSpec(), WordTokenizer()), "deepseek-v4-pro",
                             meta)


def write_run(root: Path, run_id: str, slo20: int, slo60: int, score: float) -> Path:
    """A run folder as a sweep leaves it: a throughput job with an eval after its last level, and
    a capacity job whose folder holds its capacity document."""
    run = root / run_id
    job = SynthJob()
    write_job(run, job)
    ident = level_result(job, run_id, job.concurrency[-1])["infermatrix"]
    ev = EvalRecord.model_validate({
        **{k: ident[k] for k in ("run_id", "job_id", "recipe", "model", "engine_version", "image",
                                 "hardware", "engine", "precision", "workload", "runner",
                                 "simulated")},
        "concurrency": job.concurrency[-1], "task": "gsm8k", "status": "ok", "score": score,
        "stderr": 0.005, "n_samples": 1319, "finished_at": ident["finished_at"]})
    (run / "jobs" / job.job_id / file_name("gsm8k", ev.concurrency)).write_text(
        json.dumps(document(ev, {"results": {"gsm8k": {"exact_match,none": score}}})))
    cap_dir = run / "jobs" / CAP_JOB
    cap_dir.mkdir(parents=True)
    (cap_dir / "capacity.json").write_text(json.dumps(capacity(run_id, slo20, slo60)))
    return run


def test_collect_compare_report_read_every_kind_from_one_store(tmp_path: Path) -> None:
    old = write_run(tmp_path / "runs", OLD, slo20=180, slo60=44, score=0.95)
    new = write_run(tmp_path / "runs", NEW, slo20=120, slo60=44, score=0.60)
    store = tmp_path / "history.sqlite"
    res = cli("collect", str(old), "--store", str(store), "--strict")
    assert res.returncode == 0, res.stderr
    assert ("collect: 2 capacity results (1 searches) (store: 2 added, 0 updated, 0 unchanged); "
            "1 evals (store: 1 added, 0 updated, 0 unchanged)") in res.stdout
    res = cli("collect", str(old), str(new), "--store", str(store), "-q")
    assert res.returncode == 0, res.stderr
    again = cli("collect", str(old), "--store", str(store))
    assert "2 capacity results (1 searches) (store: 0 added, 0 updated, 2 unchanged)" in again.stdout
    with Store(store) as db:
        assert (db.count(), db.count("agentic"), db.count("evals")) == (6, 4, 2)
        assert {(a.run_id, a.tier, a.passing_concurrency) for a in db.agentic()} == {
            (OLD, "SLO20", 180), (OLD, "SLO60", 44), (NEW, "SLO20", 120), (NEW, "SLO60", 44)}
        (ev,) = db.evals(EvalRecord, [NEW])
        assert ev.score == 0.60
        assert json.loads(db.eval_raw(ev.key) or b"{}")["lm_eval"]["results"]["gsm8k"]

    # compare, store against itself: its latest run against the one before, every kind
    res = cli("compare", str(store), str(store))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "### Agentic capacity (concurrent agents per SLO tier)" in out
    assert (f"| **fewer** | {CAP_RECIPE} | agentic-coding | SLO20 | 180 → 120 (-33.3%) | "
            "11.25 → 7.50 (-33.3%) | 12,857 → 8,571 (-33.3%) | 1.41 → 0.94 (-33.3%) |") in out
    assert f"| same | {CAP_RECIPE} | agentic-coding | SLO60 | 44 → 44 (+0.0%) |" in out
    assert "### Accuracy" in out and "0.950 ± 0.005 | 0.600 ± 0.005" in out
    bad = cli("compare", str(store), str(store), "--fail-on-regression", "5")
    assert bad.returncode == 1
    assert "1 SLO tiers with fewer agents, 1 accuracy regressions" in bad.stderr
    # the run folders compare the same way as the store does
    folders = cli("compare", str(old), str(new))
    assert folders.returncode == 0 and "180 → 120 (-33.3%)" in folders.stdout
    named = cli("compare", str(store), str(store), "--base-run", OLD, "--new-run", OLD)
    assert f"| same | {CAP_RECIPE} | agentic-coding | SLO20 | 180 → 180" in named.stdout

    # report from the store: throughput frontiers, the agentic view and the accuracy gate
    site = tmp_path / "site"
    res = cli("report", str(store), "-o", str(site), "--no-plots")
    assert res.returncode == 0, res.stderr
    assert "4 agentic capacity records" in res.stdout
    summary = (site / "summary.md").read_text()
    assert "### Best configuration at a given interactivity" in summary
    assert (f"| {CAP_RECIPE} | 16 | 120 | 7.5 | 8,571 | 0.94 | 44 | 2.75 | 3,143 | 0.34 |"
            in summary)
    assert "### Accuracy gate" in summary and "| gsm8k | 0.600 |" in summary
    index = (site / "index.html").read_text()
    assert 'data-view="agentic"' in index and CAP_RECIPE in index


def test_run_report_reads_the_runs_evals_and_capacity(tmp_path: Path) -> None:
    run = write_run(tmp_path, NEW, slo20=120, slo60=44, score=0.60)
    out = build_run_report(run, plots=False, gate=run_gate([run], REPO))
    summary = out["summary"].read_text()
    assert "### Agentic capacity" in summary and f"| {CAP_RECIPE} | 16 | 120 |" in summary
    assert "### Accuracy gate" in summary and "0.600" in summary
    records = [json.loads(line) for line in out["records"].read_text().splitlines()]
    assert len(records) == 3  # the throughput levels (simulated: the gate still reports the eval)
    assert run_gate([tmp_path / "nothing"], REPO) is None


def test_agentic_changes_per_tier() -> None:
    from infermatrix.results.agentic import AgenticRecord
    from infermatrix.results.compare_agentic import agentic_regressions, compare_agentic

    def rec(run: str, recipe: str, tier: str, agents: int) -> AgenticRecord:
        return AgenticRecord(run_id=run, recipe=recipe, tier=tier, passing_concurrency=agents)

    base = [rec(OLD, "a", "T", 0), rec(OLD, "b", "T", 100), rec(OLD, "c", "T", 10),
            rec(OLD, "gone", "T", 5)]
    new = [rec(NEW, "a", "T", 4), rec(NEW, "b", "T", 102), rec(NEW, "c", "T", 9),
           rec(NEW, "new", "T", 1)]
    rows = compare_agentic(base, new, noise=0.03)
    assert [(r.config[0], r.change) for r in rows] == [
        ("c", "fewer"), ("new", "new"), ("gone", "gone"), ("a", "more"), ("b", "same")]
    assert [r.config[0] for r in agentic_regressions(rows, 0.05)] == ["c"]  # -10 %
    assert agentic_regressions(rows, 0.2) == []
