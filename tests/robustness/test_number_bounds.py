"""Numbers a benchmark cannot use (10^30 tokens, 10^20 concurrent requests, 1e308 prompts per
level, infinite memory) and booleans in place of numbers are catalog errors: one `file:line`
problem and exit 2 from `validate`, before `plan` could overflow on them."""

from __future__ import annotations

from pathlib import Path

import pytest
from bounded import assert_problem_lines, call, mini_catalog

SWEEP = """entries:
  - recipes: [llama-3.1-70b-instruct/h200-vllm-fp8]
    workloads: [smoke-1k-128]
    concurrency: [1, 4]
"""
# (file, the text to find, what to put instead, the field the problem names)
CASES = [
    ("matrix/workloads.yaml", "isl: 1024", "isl: 1000000000000000000000000000000", "isl"),
    ("matrix/workloads.yaml", "osl: 128", "osl: true", "osl"),
    ("matrix/workloads.yaml", "prompts_per_concurrency: 2", "prompts_per_concurrency: 1e308",
     "prompts_per_concurrency"),
    ("matrix/workloads.yaml", "prompts_per_concurrency: 2", "prompts_per_concurrency: .nan",
     "prompts_per_concurrency"),
    ("matrix/workloads.yaml", "min_prompts: 4", "min_prompts: 4.5", "min_prompts"),
    ("matrix/sweeps/tiny.yaml", "concurrency: [1, 4]", "concurrency: [1, 100000000000000000000]",
     "concurrency"),
    ("matrix/sweeps/tiny.yaml", "concurrency: [1, 4]", "concurrency: [true]", "concurrency"),
    ("matrix/sweeps/tiny.yaml", "concurrency: [1, 4]", "concurrency: [0]", "concurrency"),
    ("matrix/hardware.yaml", "memory_gb: 141", "memory_gb: .inf", "memory_gb"),
    ("matrix/hardware.yaml", "gpus_per_node: 8       # HGX H200", "gpus_per_node: 1e400",
     "gpus_per_node"),
    ("matrix/models.yaml", "max_context: 131072", "max_context: 1000000000000000000000000000000",
     "max_context"),
    ("benchmarks/llama-3.1-70b-instruct/h200-vllm-fp8.yaml", "tp: 8", "tp: true", "tp"),
    ("runners/fleets.yaml", "gpus_per_node: 8\n  model_cache: /data/hf-cache",
     "gpus_per_node: 100000000000000000000\n  model_cache: /data/hf-cache", "gpus_per_node"),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = mini_catalog(tmp_path)
    (root / "matrix" / "sweeps").mkdir()
    (root / "matrix" / "sweeps" / "tiny.yaml").write_text(SWEEP)
    return root


def test_the_scratch_catalog_is_valid(root: Path) -> None:
    rc, out, err = call(["validate", "--root", str(root)])
    assert rc == 0 and out.startswith("ok:"), err


@pytest.mark.parametrize(("name", "old", "new", "field"), CASES,
                         ids=[f"{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_out_of_bounds_number(root: Path, name: str, old: str, new: str, field: str) -> None:
    path = root / name
    text = path.read_text()
    assert old in text, f"{old!r} not in {name}"
    path.write_text(text.replace(old, new, 1))
    rc, _, err = call(["validate", "--root", str(root)])
    assert rc == 2, err
    lines = assert_problem_lines(err)
    assert lines[0].startswith(f"{name}:") and field in lines[0], lines
    rc, _, err = call(["plan", "tiny", "--root", str(root)])
    assert rc == 2 and "Traceback" not in err


@pytest.mark.parametrize("levels", [["0"], ["-3"], ["1", "100000000000000000000"]])
def test_run_concurrency_out_of_bounds(root: Path, levels: list[str]) -> None:
    rc, _, err = call(["run", "--root", str(root), "--recipe", "llama-3.1-70b-instruct/h200-vllm-fp8",
                       "--workload", "smoke-1k-128", "--runner-label", "h200-dgx",
                       "--concurrency", *levels, "--virtual"])
    assert rc == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("infermatrix: --concurrency"), line
