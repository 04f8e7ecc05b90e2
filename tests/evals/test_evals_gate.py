"""The gate on recorded evaluations: who may be published, and why not."""

from __future__ import annotations

from pathlib import Path

import pytest
from imx_evals_data import RUN, eval_record, perf_records, synth_job

from infermatrix.catalog.accuracy import AccuracyConfig
from infermatrix.evals.config import load_accuracy
from infermatrix.evals.gate import Gate, mark
from infermatrix.evals.publish import apply_gate
from infermatrix.results.pareto import frontier, frontiers

FAST = synth_job(variant="fast", speed=3.0)  # fast, and (in some tests) wrong
SLOW = synth_job(variant="slow", speed=1.0)


@pytest.fixture
def accuracy(repo_root: Path) -> AccuracyConfig:
    return load_accuracy(repo_root)  # gsm8k default threshold 0.90


def _state(rec_job, evals, accuracy, **kw) -> str:
    return Gate(evals, accuracy).verdict(perf_records(rec_job, **kw)[0]).state


def test_pass_fail_and_missing(accuracy: AccuracyConfig) -> None:
    assert _state(FAST, [eval_record(FAST, score=0.95)], accuracy) == "passed"
    assert _state(FAST, [eval_record(FAST, score=0.90)], accuracy) == "passed"  # at threshold
    assert _state(FAST, [eval_record(FAST, score=0.89)], accuracy) == "failed"
    assert _state(FAST, [], accuracy) == "missing"  # a real engine with no eval
    assert _state(FAST, [eval_record(SLOW)], accuracy) == "missing"  # another recipe's eval


def test_failed_eval_never_passes(accuracy: AccuracyConfig) -> None:
    broken = eval_record(FAST, status="failed", score=None, error="lm-eval exited with code 1")
    verdict = Gate([broken], accuracy).verdict(perf_records(FAST)[0])
    assert verdict.state == "failed" and "lm-eval exited with code 1" in verdict.reason
    # even with no threshold anywhere (no accuracy.yaml, none recorded)
    assert _state(FAST, [broken.model_copy(update={"threshold": None})], None) == "failed"
    # a status "ok" without a score is not a pass either
    assert _state(FAST, [eval_record(FAST, score=None)], accuracy) == "failed"


def test_thresholds_are_read_now(accuracy: AccuracyConfig) -> None:
    ev = eval_record(FAST, score=0.5, threshold=0.4)  # passed when it ran ...
    assert _state(FAST, [ev], None) == "passed"  # ... and still does with only its own threshold
    assert _state(FAST, [ev], accuracy) == "failed"  # but accuracy.yaml now asks 0.90
    tiny = eval_record(FAST, model="tiny-llama", score=0.0)
    assert _state(FAST, [tiny], accuracy) == "passed"  # per-model threshold 0.0 wins
    unknown_task = eval_record(FAST, task="hellaswag", score=0.1)
    assert _state(FAST, [unknown_task], accuracy) == "passed"  # recorded, gates nothing


def test_freshness_and_identity(accuracy: AccuracyConfig) -> None:
    ev = eval_record(FAST, finished_at="2026-11-01T00:00:00Z")
    assert _state(FAST, [ev], accuracy, started_at="2026-11-14T23:00:00Z") == "passed"
    assert _state(FAST, [ev], accuracy, started_at="2026-11-16T00:00:00Z") == "missing"
    assert _state(FAST, [ev], accuracy, started_at="2026-10-20T00:00:00Z") == "passed"  # eval after
    # a new engine version or image needs its own evaluation
    assert _state(FAST, [eval_record(FAST, engine_version="0.5.0")], accuracy) == "missing"
    assert _state(FAST, [eval_record(FAST, image="other:tag")], accuracy) == "missing"
    assert _state(FAST, [eval_record(FAST, finished_at=None, started_at=None)], accuracy) == "missing"
    naive = eval_record(FAST, finished_at="2026-11-22T09:20:00")  # no zone: UTC
    assert _state(FAST, [naive], accuracy) == "passed"
    assert _state(FAST, [eval_record(FAST, finished_at="yesterday", started_at="?")], accuracy) == "missing"


def test_latest_run_decides_and_every_eval_counts(accuracy: AccuracyConfig) -> None:
    old_fail = eval_record(FAST, run_id="r1", score=0.5, finished_at="2026-11-22T08:00:00Z")
    new_pass = eval_record(FAST, run_id="r2", score=0.95, finished_at="2026-11-22T10:00:00Z")
    assert _state(FAST, [old_fail, new_pass], accuracy) == "passed"
    new_fail = new_pass.model_copy(update={"concurrency": 4, "score": 0.7})  # same run, other level
    verdict = Gate([old_fail, new_pass, new_fail], accuracy).verdict(perf_records(FAST)[0])
    assert verdict.state == "failed" and "after c=4" in verdict.reason and "0.700 < threshold 0.9" in verdict.reason
    gpqa_fail = new_pass.model_copy(update={"task": "gpqa_diamond", "score": 0.2})
    assert _state(FAST, [new_pass, gpqa_fail], accuracy) == "failed"


def test_simulated_records(accuracy: AccuracyConfig) -> None:
    assert _state(FAST, [], accuracy, simulated=True) == "exempt"
    sim_eval = eval_record(FAST, score=0.0, simulated=True)
    # once a simulated recipe is evaluated, it is gated like any other
    assert _state(FAST, [sim_eval], accuracy, simulated=True) == "failed"
    assert _state(FAST, [sim_eval.model_copy(update={"finished_at": "2026-01-01T00:00:00Z"})],
                  accuracy, simulated=True) == "missing"
    # the simulated engine's filler says nothing about the real engine, and the reverse
    assert _state(FAST, [sim_eval], accuracy) == "missing"
    assert _state(FAST, [eval_record(FAST, score=0.95)], accuracy, simulated=True) == "exempt"


def test_gated_points_leave_the_frontier(accuracy: AccuracyConfig) -> None:
    records = perf_records(FAST) + perf_records(SLOW)
    assert {r.recipe for r in frontier(records)} == {FAST.recipe}  # fast dominates everything
    evals = [eval_record(FAST, score=0.42), eval_record(SLOW, score=0.93)]
    marked, summary = apply_gate(records, evals, accuracy)
    gated = [r for r in marked if r.status == "gated"]
    assert {r.recipe for r in gated} == {FAST.recipe} and len(gated) == len(FAST.concurrency)
    assert all("0.420 < threshold 0.9" in r.error for r in gated)
    assert {r.recipe for r in frontier(marked)} == {SLOW.recipe}
    panel = frontiers(marked)[(FAST.model, FAST.workload)]
    assert {r.recipe for line in panel.values() for r in line} == {SLOW.recipe}
    assert f"`{FAST.recipe}`" in summary and "0.420 < threshold 0.9" in summary
    assert "| 0.930 |" in summary and "| pass |" in summary and RUN in summary
    # marking never touches a failed level or a passing recipe
    assert [r.status for r in marked if r.recipe == SLOW.recipe] == ["ok"] * len(SLOW.concurrency)


def test_mark_keeps_failed_levels_as_they_are(accuracy: AccuracyConfig) -> None:
    rec = perf_records(FAST)[0].model_copy(update={"status": "failed", "error": "error rate"})
    assert mark([rec], Gate([], accuracy))[0].error == "error rate"
