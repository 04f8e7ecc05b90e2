"""matrix/accuracy.yaml: the repository's file loads; mistakes are one `file:line: field` line each;
the eval policy picks levels and tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from infermatrix.catalog.accuracy import EvalPolicy, TaskOverride
from infermatrix.catalog.loader import load_catalog
from infermatrix.catalog.yamlsrc import CatalogError
from infermatrix.evals.config import ACCURACY_FILE, load_accuracy
from infermatrix.evals.plan import plan_levels


def test_repository_file_loads(repo_root: Path) -> None:
    cat = load_catalog(repo_root)
    acc = load_accuracy(repo_root, cat.models)
    assert acc.default_tasks == ["gsm8k", "gpqa_diamond"]
    assert acc.tasks["gsm8k"].lm_eval_task == "gsm8k"
    assert acc.threshold("llama-3.1-70b-instruct", "gsm8k") == 0.90  # the default
    assert acc.threshold("tiny-llama", "gsm8k") == 0.0  # its own entry wins
    assert acc.threshold("llama-3.1-70b-instruct", "nope") is None


def _write(root: Path, text: str) -> None:
    (root / ACCURACY_FILE).parent.mkdir(parents=True, exist_ok=True)
    (root / ACCURACY_FILE).write_text(text)


GOOD = """\
tasks:
  gsm8k: {lm_eval_task: gsm8k, metric: "exact_match,strict-match"}
default_tasks: [gsm8k]
thresholds:
  default: {gsm8k: 0.9}
"""


@pytest.mark.parametrize(("text", "expected"), [
    (GOOD.replace("lm_eval_task: gsm8k,", "lm_eval_task: gsm8k, shots: 5,"),
     "matrix/accuracy.yaml:2: tasks.gsm8k.shots: unknown field"),
    (GOOD.replace("{gsm8k: 0.9}", "{gsm8k: 1.5}"),
     "matrix/accuracy.yaml:5: thresholds.default.gsm8k: Input should be less than or equal to 1"),
    (GOOD.replace("default_tasks: [gsm8k]", "default_tasks: [gsm8k, mmlu]"),
     "unknown task(s) mmlu"),
    ("tasks: [\n", "matrix/accuracy.yaml:2: invalid YAML"),
    ("- a\n", "matrix/accuracy.yaml:1: expected a mapping"),
])
def test_mistakes_name_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    _write(tmp_path, text)
    with pytest.raises(CatalogError) as err:
        load_accuracy(tmp_path)
    assert expected in str(err.value)


def test_threshold_for_unknown_model(tmp_path: Path) -> None:
    _write(tmp_path, GOOD + "  models:\n    lama-3: {gsm8k: 0.5}\n")
    assert load_accuracy(tmp_path).threshold("lama-3", "gsm8k") == 0.5
    with pytest.raises(CatalogError, match=r"accuracy.yaml:7: thresholds.models.lama-3: unknown model"):
        load_accuracy(tmp_path, known_models=["llama-3"])


@pytest.mark.parametrize(("at", "levels"), [
    (["max", "median"], [8, 64]),
    (["min"], [1]),
    (["all"], [1, 4, 8, 32, 64]),
    ([4, 5], [4]),  # a level the entry does not sweep picks nothing
])
def test_policy_levels(at: list, levels: list[int]) -> None:
    assert EvalPolicy(at=at).levels([64, 1, 8, 4, 32]) == levels
    assert EvalPolicy(at=at, enabled=False).levels([1, 2]) == []


def test_plan_levels_per_job(repo_root: Path) -> None:
    acc = load_accuracy(repo_root)
    policy = EvalPolicy(at=["max", "median"],
                        tasks=["gsm8k", TaskOverride(task="gpqa_diamond", limit=50, concurrency=8)])
    plan = plan_levels(policy, acc, "w", [1, 4, 16], [1, 4, 16])
    assert sorted(plan) == [4, 16]
    (g_name, gsm8k), (q_name, gpqa) = plan[16]
    assert (g_name, gsm8k.num_fewshot, gsm8k.limit) == ("gsm8k", 5, None)
    assert (q_name, gpqa.limit, gpqa.concurrency, gpqa.lm_eval_task) == \
        ("gpqa_diamond", 50, 8, "gpqa_diamond_cot_zeroshot")
    # a recipe relaunched per level: only the one-level jobs holding a picked level evaluate
    assert plan_levels(policy, acc, "w", [1, 4, 16], [1]) == {}
    assert list(plan_levels(policy, acc, "w", [1, 4, 16], [16])) == [16]
    # once per recipe: only the named workload evaluates
    once = EvalPolicy(workloads=["a"])
    assert plan_levels(once, acc, "b", [1, 4], [1, 4]) == {}
    assert list(plan_levels(once, acc, "a", [1, 4], [1, 4])) == [1, 4]
    assert plan_levels(None, acc, "a", [1], [1]) == {}
    with pytest.raises(KeyError):
        plan_levels(EvalPolicy(tasks=["mmlu"]), acc, "a", [1], [1])
