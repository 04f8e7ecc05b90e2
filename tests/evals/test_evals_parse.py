"""Parsing lm-eval's results JSON: recorded real outputs, and every way one can be wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from imx_evals_data import LOCAL_PASS, SIM_FAIL

from infermatrix.evals.parse import EvalOutputError, find_results_file, load_results, parse_results


def test_recorded_pass_with_filters() -> None:
    score = parse_results(load_results(LOCAL_PASS), "imx_local_math", "exact_match,flexible-extract")
    assert score.score == pytest.approx(0.9)
    assert score.stderr == pytest.approx(0.1)
    assert score.n_samples == 10 and score.n_samples_total == 10
    assert score.task_version == "2.0" and score.num_fewshot == 0
    assert score.lm_eval_version == "0.4.13"
    strict = parse_results(load_results(LOCAL_PASS), "imx_local_math", "exact_match,strict-match")
    assert strict.score == 0.0


def test_recorded_sim_run_scores_zero() -> None:
    score = parse_results(load_results(SIM_FAIL), "imx_local_qa", "exact_match,none")
    assert score.score == 0.0 and score.n_samples == 8 and score.task_version == "1.0"


def _doc() -> dict[str, Any]:
    return json.loads(LOCAL_PASS.read_text())


@pytest.mark.parametrize(("mutate", "reason"), [
    (lambda d: d.pop("results"), "no 'results' object"),
    (lambda d: d["results"].pop("imx_local_math"), "task 'imx_local_math' missing"),
    (lambda d: d["results"]["imx_local_math"].pop("exact_match,flexible-extract"),
     "metric 'exact_match,flexible-extract' missing"),
    (lambda d: d["results"]["imx_local_math"].update({"exact_match,flexible-extract": "N/A"}),
     "not a score"),
    (lambda d: d["results"]["imx_local_math"].update({"exact_match,flexible-extract": 1.5}),
     "not a score"),
    (lambda d: d["results"]["imx_local_math"].update({"exact_match,flexible-extract": True}),
     "not a score"),
    (lambda d: d.pop("n-samples"), "no sample count"),
    (lambda d: d["n-samples"]["imx_local_math"].update({"effective": 0}), "no sample count"),
])
def test_malformed_results_are_errors(mutate: Any, reason: str) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(EvalOutputError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_results(doc, "imx_local_math", "exact_match,flexible-extract")


def test_stderr_na_is_none() -> None:
    doc = _doc()
    doc["results"]["imx_local_math"]["exact_match_stderr,flexible-extract"] = "N/A"
    assert parse_results(doc, "imx_local_math", "exact_match,flexible-extract").stderr is None


def test_files(tmp_path: Path) -> None:
    with pytest.raises(EvalOutputError, match="no results file"):
        find_results_file(tmp_path)
    with pytest.raises(EvalOutputError, match="no such results file"):
        load_results(tmp_path / "nope.json")
    broken = tmp_path / "model" / "results_2026.json"
    broken.parent.mkdir()
    broken.write_text('{"results": {')
    assert find_results_file(tmp_path) == broken
    with pytest.raises(EvalOutputError, match="unreadable results JSON"):
        load_results(broken)
    broken.write_text("[1, 2]")
    with pytest.raises(EvalOutputError, match="not an object"):
        load_results(broken)
