"""The eval policy inside a sweep: validated with file and line, planned per job, and a policy
that cannot be set up leaves a failed eval record instead of silently evaluating nothing."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from infermatrix.catalog.loader import load_catalog
from infermatrix.catalog.yamlsrc import CatalogError
from infermatrix.evals.config import check_catalog, load_accuracy
from infermatrix.evals.gate import Gate
from infermatrix.evals.job import JobEvals
from infermatrix.evals.record import read_eval_file
from infermatrix.evals.step import EvalServer
from infermatrix.plan.jobs import plan_sweep

RECIPES = "[deepseek-r1-0528/h200-sglang-fp8, llama-3.1-70b-instruct/h200-vllm-fp8]"


def _sweep(root: Path, policy: str, workloads: str = "[smoke-1k-128]") -> None:
    (root / "matrix" / "sweeps" / "evalpolicy.yaml").write_text(f"""\
description: policy test
entries:
  - recipes: {RECIPES}
    workloads: {workloads}
    concurrency: [1, 4, 16]
    eval: {policy}
""")


def test_jobs_follow_the_policy(catalog_copy: Path) -> None:
    _sweep(catalog_copy, "{at: [max, median], tasks: [gsm8k]}")
    cat = load_catalog(catalog_copy)
    acc = load_accuracy(catalog_copy)
    # the planner settles the evals into each job: task, settings, threshold, after which level
    plans = {(j.recipe, tuple(j.concurrency)): j.evals for j in plan_sweep(cat, "evalpolicy")}
    # one server for all levels (SGLang): evaluates after 4 and 16
    assert [e.after for e in plans[("deepseek-r1-0528/h200-sglang-fp8", (1, 4, 16))]] == [4, 16]
    # one launch per level (vLLM's --max-num-seqs $CONC): the c=4 and c=16 jobs evaluate
    vllm = {c: p for (r, c), p in plans.items() if r.startswith("llama")}
    assert {c: [e.after for e in p] for c, p in vllm.items()} == {(1,): [], (4,): [4], (16,): [16]}
    (step,) = vllm[(16,)]
    assert (step.task, step.spec, step.error) == ("gsm8k", acc.tasks["gsm8k"], None)
    assert step.threshold == acc.threshold("llama-3.1-70b-instruct", "gsm8k")
    # the runner's plan is the job's: no sweep file is read at run time
    assert JobEvals.for_job(cat, plan_sweep(cat, "evalpolicy")[0], print).plan.keys() == {4, 16}
    assert check_catalog(cat) == []


def test_policy_mistakes_have_lines(catalog_copy: Path) -> None:
    _sweep(catalog_copy, "{at: [maximum]}")
    with pytest.raises(CatalogError, match=r"matrix/sweeps/evalpolicy.yaml:6: entries\[0\].eval.at"):
        load_catalog(catalog_copy)
    _sweep(catalog_copy, "{tasks: [gsm8k, mmlu], workloads: [fixed-1k-1k]}")
    problems = check_catalog(load_catalog(catalog_copy))
    assert problems == [
        "matrix/sweeps/evalpolicy.yaml:6: entries[0].eval.tasks[1]: unknown eval task 'mmlu' "
        "(not in matrix/accuracy.yaml)",
        "matrix/sweeps/evalpolicy.yaml:6: entries[0].eval.workloads: workload 'fixed-1k-1k' is not "
        "one of this entry's",
    ]


def test_unusable_policy_records_a_failed_eval(catalog_copy: Path, tmp_path: Path) -> None:
    _sweep(catalog_copy, "{at: [max], tasks: [mmlu]}")
    cat = load_catalog(catalog_copy)
    job = next(j for j in plan_sweep(cat, "evalpolicy") if j.recipe.startswith("deepseek"))
    lines: list[str] = []
    evals = JobEvals.for_job(cat, job, lines.append)
    assert "unknown eval task 'mmlu'" in lines[0]
    identity = {"kind": "level-result", "run_id": "r", "job_id": job.id, "recipe": job.recipe,
                "model": job.model, "simulated": False}
    target = EvalServer("http://127.0.0.1:9", "m", "completions")
    assert evals.after_level(4, target, identity, tmp_path, lines.append) == []
    (entry,) = evals.after_level(16, target, identity, tmp_path, lines.append)
    assert entry["status"] == "failed" and "mmlu" in entry["error"]
    rec = read_eval_file(tmp_path / entry["file"])
    assert rec.status == "failed" and json.loads((tmp_path / entry["file"]).read_text())["lm_eval"] is None
    perf = SimpleNamespace(recipe=job.recipe, engine_version="", image="", simulated=False,
                           started_at=rec.started_at, finished_at=None)
    verdict = Gate([rec], load_accuracy(catalog_copy)).verdict(perf)  # type: ignore[arg-type]
    assert verdict.state == "failed" and "unknown eval task 'mmlu'" in verdict.reason
    # a sweep without a policy plans nothing and loads nothing
    (catalog_copy / "matrix" / "accuracy.yaml").write_text("broken: [")
    plain = next(j for j in plan_sweep(cat, "smoke"))
    assert JobEvals.for_job(cat, plain, lines.append).plan == {}
