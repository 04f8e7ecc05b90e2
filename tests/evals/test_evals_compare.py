"""Accuracy changes beside performance changes in `compare`."""

from __future__ import annotations

from pathlib import Path

from imx_evals_data import eval_record, synth_job

from infermatrix.evals.compare import accuracy_markdown, accuracy_regressions, compare_accuracy
from infermatrix.evals.config import load_accuracy

A, B, C, D, E = (synth_job(variant=v) for v in "abcde")


def test_changes(repo_root: Path) -> None:
    acc = load_accuracy(repo_root)
    base = [eval_record(A, run_id="r1", score=0.95, stderr=0.006),
            eval_record(B, run_id="r1", score=0.95, stderr=0.006),
            eval_record(C, run_id="r1", score=0.92, stderr=0.007),
            eval_record(D, run_id="r1", score=0.93, stderr=0.007)]
    new = [eval_record(A, run_id="r2", score=0.80, stderr=0.01),  # under 0.90 now
           eval_record(B, run_id="r2", score=0.951, stderr=0.006),  # noise
           eval_record(C, run_id="r2", score=0.96, stderr=0.005),  # clearly better
           # two levels of one run: the worse one decides
           eval_record(D, run_id="r2", score=0.97, stderr=0.005),
           eval_record(D, run_id="r2", concurrency=4, status="failed", score=None, error="x"),
           eval_record(E, run_id="r2", score=0.91)]
    rows = {r.recipe: r for r in compare_accuracy(base, new, acc)}
    assert rows[A.recipe].change == "now failing" and round(rows[A.recipe].delta, 3) == -0.15
    assert rows[B.recipe].change == "same"
    assert rows[C.recipe].change == "higher"
    assert rows[D.recipe].change == "now failing" and rows[D.recipe].delta is None
    assert rows[E.recipe].change == "new"
    assert {r.recipe for r in accuracy_regressions(list(rows.values()))} == {A.recipe, D.recipe}
    text = accuracy_markdown(list(rows.values()))
    assert "### Accuracy" in text
    assert f"| {A.recipe} | gsm8k | 0.950 ± 0.006 | 0.800 ± 0.010 | -0.150 | now failing |" in text
    assert f"| {D.recipe} | gsm8k | 0.930 ± 0.007 | failed | – | now failing |" in text
    assert accuracy_markdown([]) == ""


def test_latest_run_per_side(repo_root: Path) -> None:
    acc = load_accuracy(repo_root)
    base = [eval_record(A, run_id="r0", score=0.5, finished_at="2026-11-20T00:00:00Z"),
            eval_record(A, run_id="r1", score=0.95)]
    rows = compare_accuracy(base, [eval_record(A, run_id="r2", score=0.95)], acc)
    assert [r.change for r in rows] == ["same"]


def test_section_from_run_folders(repo_root: Path, tmp_path: Path) -> None:
    from imx_evals_data import write_eval

    from infermatrix.evals.compare import accuracy_section
    from infermatrix.evals.history import collect_evals

    write_eval(tmp_path / "base" / "jobs" / "a", eval_record(A, run_id="r1", score=0.95))
    write_eval(tmp_path / "new" / "jobs" / "a", eval_record(A, run_id="r2", score=0.5))
    write_eval(tmp_path / "new" / "jobs" / "b", eval_record(B, run_id="r3", score=0.5))  # not compared
    base, new = (collect_evals([tmp_path / side]).records for side in ("base", "new"))
    text, worse = accuracy_section(base, [e for e in new if e.run_id == "r2"],
                                   load_accuracy(repo_root))
    assert worse == 1 and "now failing" in text and B.recipe not in text
