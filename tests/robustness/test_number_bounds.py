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
TEN_TO_30 = "1" + "0" * 30
WL, SWEEP_FILE, HW = "matrix/workloads.yaml", "matrix/sweeps/tiny.yaml", "matrix/hardware.yaml"
# (file, field, the value written there, the value put instead): `field: value` is replaced
CASES = [
    (WL, "isl", "1024", TEN_TO_30), (WL, "osl", "128", "true"),
    (WL, "prompts_per_concurrency", "2", "1e308"), (WL, "prompts_per_concurrency", "2", ".nan"),
    (WL, "min_prompts", "4", "4.5"),
    (SWEEP_FILE, "concurrency", "[1, 4]", "[1, 100000000000000000000]"),
    (SWEEP_FILE, "concurrency", "[1, 4]", "[true]"), (SWEEP_FILE, "concurrency", "[1, 4]", "[0]"),
    (HW, "memory_gb", "141", ".inf"), (HW, "gpus_per_node", "8       # HGX H200", "1e400"),
    ("matrix/models.yaml", "max_context", "131072", TEN_TO_30),
    ("benchmarks/llama-3.1-70b-instruct/h200-vllm-fp8.yaml", "tp", "8", "true"),
    ("runners/fleets.yaml", "gpus_per_node", "8\n  model_cache: /data/hf-cache",
     "100000000000000000000\n  model_cache: /data/hf-cache"),
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


@pytest.mark.parametrize(("name", "field", "old", "new"), CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_out_of_bounds_number(root: Path, name: str, field: str, old: str, new: str) -> None:
    path = root / name
    text = path.read_text()
    assert f"{field}: {old}" in text, f"{field}: {old!r} not in {name}"
    path.write_text(text.replace(f"{field}: {old}", f"{field}: {new}", 1))
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
