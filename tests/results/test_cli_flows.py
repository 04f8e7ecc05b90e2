"""collect → store → report as CI runs them: run selection, merged inputs, the accuracy gate,
agentic capacity documents."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from imx_results_data import RUN, messy_run
from imx_support.synthetic import SynthJob, level_result, write_job

from infermatrix.evals.record import EvalRecord, document, file_name
from infermatrix.results.export import read_records_jsonl
from infermatrix.results.store import Store

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infermatrix.cli", *args], capture_output=True,
                          text=True, timeout=180, check=False, cwd=REPO)


def test_report_selects_runs_and_merges_inputs(tmp_path: Path) -> None:
    job = SynthJob()
    runs = ["20261120T000000Z-aaaaaa", "20261121T000000Z-bbbbbb", "20261122T000000Z-cccccc"]
    store = tmp_path / "history.sqlite"
    for run in runs:
        write_job(tmp_path / "runs" / run, job)
        res = cli("collect", str(tmp_path / "runs" / run), "--store", str(store), "-q")
        assert res.returncode == 0
    site = tmp_path / "site"
    res = cli("report", str(store), "-o", str(site), "--no-plots", "--last", "2", "--title", "two")
    assert res.returncode == 0, res.stderr
    assert {r.run_id for r in read_records_jsonl(site / "records.jsonl")} == set(runs[1:])
    assert "<title>two</title>" in (site / "index.html").read_text()
    res = cli("report", str(store), "-o", str(site), "--no-plots", "--run", runs[0])
    assert {r.run_id for r in read_records_jsonl(site / "records.jsonl")} == {runs[0]}
    # a run directory after the store: its version of a level wins
    newer = tmp_path / "again" / runs[0]
    write_job(newer, SynthJob(speed=2.0))
    res = cli("report", str(store), str(tmp_path / "again"), "-o", str(site), "--no-plots")
    records = read_records_jsonl(site / "records.jsonl")
    assert res.returncode == 0 and len(records) == 3 * len(job.concurrency)
    first = [r for r in records if r.run_id == runs[0]]
    assert {r.source.startswith(str(newer)) for r in first} == {True}
    bad = cli("report", str(store), "-o", str(site), "--run", "nope")
    assert bad.returncode == 2 and "run nope is not in the inputs" in bad.stderr


def test_collect_and_report_apply_the_accuracy_gate(tmp_path: Path) -> None:
    """A real-engine recipe whose gsm8k score is under matrix/accuracy.yaml's 0.90: stored as
    measured, exported and published as gated."""
    job = SynthJob(simulated=False)
    run = tmp_path / RUN
    write_job(run, job)
    ident = level_result(job, RUN, job.concurrency[-1])["infermatrix"]
    ev = EvalRecord.model_validate({
        **{k: ident[k] for k in ("run_id", "job_id", "recipe", "model", "engine_version", "image",
                                 "hardware", "engine", "precision", "workload", "runner")},
        "concurrency": job.concurrency[-1], "task": "gsm8k", "status": "ok", "score": 0.5,
        "stderr": 0.01, "n_samples": 100, "finished_at": ident["finished_at"]})
    (run / "jobs" / job.job_id / file_name("gsm8k", ev.concurrency)).write_text(
        json.dumps(document(ev, None)))
    store, jsonl = tmp_path / "history.sqlite", tmp_path / "out.jsonl"
    res = cli("collect", str(run), "--store", str(store), "--jsonl", str(jsonl), "--strict")
    assert res.returncode == 0, res.stderr  # an eval file is infermatrix metadata, not a problem
    assert "2 manifests" in res.stdout
    assert "accuracy gate: 1 evals (0 failed to run), 3 levels of 1 recipes held back" in res.stdout
    with Store(store) as db:
        assert [e.score for e in db.evals(EvalRecord)] == [0.5]
    assert {r.status for r in read_records_jsonl(jsonl)} == {"gated"}
    with Store(store) as db:  # the store keeps the measurement as it was
        assert {r.status for r in db.records()} == {"ok"}
    site = tmp_path / "site"
    res = cli("report", str(store), "-o", str(site), "--no-plots")
    assert res.returncode == 0, res.stderr
    records = read_records_jsonl(site / "records.jsonl")
    assert {r.status for r in records} == {"gated"}
    assert "score 0.500 < threshold 0.9" in records[0].error
    summary = (site / "summary.md").read_text()
    assert "### Accuracy gate" in summary and f"`{job.recipe}`" in summary
    frontiers = json.loads((site / "frontiers.json").read_text())
    assert all(not v["panels"] for v in frontiers["views"].values())


def capacity_document(run_id: str) -> dict:
    tier = {"name": "SLO20", "min_output_speed": 20.0, "max_ttft_s": 10.0}
    levels = [{"concurrency": c, "completed": 5, "error_rate": 0.0, "p25_output_speed": s,
               "p95_ttft_ms": 900.0, "tiers": {"SLO20": {"passed": s >= 20, "reason": ""}}}
              for c, s in ((4, 40.0), (8, 25.0), (16, 12.0))]
    return {"schema": "infermatrix-agentic-capacity", "schema_version": 1, "model_id": "m",
            "source": "synthetic", "tiers": [{"tier": tier, "passing_concurrency": 8,
                                              "first_failing": 16, "bounded": True, "gpus": 8,
                                              "agents_per_gpu": 1.0, "agents_per_kw": None}],
            "levels": levels,
            "infermatrix": {"run_id": run_id, "recipe": "a/x", "hardware": "H100"}}


def test_collect_keeps_agentic_capacity_documents(tmp_path: Path) -> None:
    run = messy_run(tmp_path)
    (run / "capacity.json").write_text(json.dumps(capacity_document(RUN)))
    store = tmp_path / "h.sqlite"
    res = cli("collect", str(run), "--store", str(store))
    assert res.returncode == 0 and "4 manifests" in res.stdout
    with Store(store) as db:
        (rec,) = db.agentic()
    assert (rec.recipe, rec.tier, rec.passing_concurrency) == ("a/x", "SLO20", 8)
    assert rec.agents_per_gpu == 1.0
    assert [lv.passed for lv in rec.levels] == [True, True, False]
