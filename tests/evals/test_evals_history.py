"""Eval records through collect and the history store, beside the performance records."""

from __future__ import annotations

import json
from pathlib import Path

from imx_evals_data import LOCAL_PASS, eval_record, synth_job, write_eval
from imx_support.synthetic import write_job

from infermatrix.commands.results import evals_from
from infermatrix.evals.history import collect_evals
from infermatrix.evals.record import EvalRecord
from infermatrix.results.store import Store

JOB = synth_job(variant="a")


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run1"
    write_job(run, JOB)
    job_dir = run / "jobs" / JOB.job_id
    write_eval(job_dir, eval_record(JOB, run_id="run1"), json.loads(LOCAL_PASS.read_text()))
    write_eval(job_dir, eval_record(JOB, run_id="run1", task="gpqa_diamond", status="failed",
                                    score=None, error="lm-eval timed out after 120 min"))
    (job_dir / "eval-broken-c16.json").write_text('{"kind": "eval-result", "run_id": ')
    (job_dir / "eval-foreign-c16.json").write_text('{"kind": "eval-result", "recipe": "x"}')
    (job_dir / "eval-gsm8k-c16.log").write_text("log")
    return run


def test_collect_keeps_good_and_names_bad(tmp_path: Path) -> None:
    got = collect_evals([_run(tmp_path)])
    assert sorted((r.task, r.status) for r in got.records) == [("gpqa_diamond", "failed"), ("gsm8k", "ok")]
    reasons = dict(got.problems)
    assert len(reasons) == 2
    assert any(p.endswith("eval-broken-c16.json") for p in reasons)
    assert "run_id" in next(v for k, v in reasons.items() if k.endswith("eval-foreign-c16.json"))
    failed = next(r for r in got.records if r.status == "failed")
    assert failed.error == "lm-eval timed out after 120 min" and failed.source


def test_store_round_trip_and_idempotence(tmp_path: Path) -> None:
    got = collect_evals([_run(tmp_path)])
    store = tmp_path / "history.sqlite"
    with Store(store) as db:  # the store's evals table, beside the performance records
        assert db.save_evals(got.records, got.raw).added == 2
        again = db.save_evals(got.records, got.raw)  # upsert: still two rows, none rewritten
        assert (again.added, again.updated, again.unchanged) == (0, 0, 2)
        loaded = db.evals(EvalRecord)
        gsm8k = next(r for r in loaded if r.task == "gsm8k")
        raw = json.loads(db.eval_raw(gsm8k.key) or b"{}")
        assert (db.count(), db.count("evals")) == (0, 2)
        assert db.evals(EvalRecord, runs=["other"]) == []
    assert sorted(r.model_dump_json() for r in loaded) == sorted(r.model_dump_json() for r in got.records)
    assert raw["lm_eval"]["lm_eval_version"] == "0.4.13"  # lm-eval's own output, kept
    assert {r.task for r in evals_from([store, tmp_path / "run1"])} == {"gsm8k", "gpqa_diamond"}
    assert evals_from([store], runs={"other"}) == []


def test_collect_note_marks_exports(tmp_path: Path) -> None:
    from imx_evals_data import perf_records

    from infermatrix.evals.publish import collect_note

    run = _run(tmp_path)  # the gsm8k eval scored 0.95, the gpqa_diamond one failed to run
    records = perf_records(JOB, run_id="run1")
    marked, note = collect_note([run], records)
    assert note == "accuracy gate: 2 evals (1 failed to run), 3 levels of 1 recipes held back"
    assert {r.status for r in marked} == {"gated"} and {r.status for r in records} == {"ok"}
    # no evals: real-engine levels are held back all the same; simulated ones are exempt
    assert collect_note([tmp_path / "empty"], records)[1] == \
        "accuracy gate: 0 evals (0 failed to run), 3 levels of 1 recipes held back"
    sim = perf_records(JOB, run_id="run1", simulated=True)
    assert collect_note([tmp_path / "empty"], sim) == (sim, "")
