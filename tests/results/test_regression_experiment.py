"""The regression experiment in small (scripts/regression_experiment.py, docs/results.md):
identical simulated nights never fail the gate; a night with one configuration 10 % slower
does, and flags only that configuration."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "regression_experiment.py"


def _script():  # noqa: ANN202 (a module loaded from its file)
    spec = importlib.util.spec_from_file_location("regression_experiment", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_identical_nights_pass_and_a_tenth_slower_configuration_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    experiment = _script()
    assert experiment.main(["--pairs", "3", "--history", "3", "--workers", "1",
                            "--recipe", "llama-3.1-70b-instruct/h200-vllm-fp8",
                            "--recipe", "deepseek-r1-0528/h200-sglang-fp8",
                            "--concurrency", "4", "16", "--out", str(tmp_path)]) == 0
    result = capsys.readouterr().out.strip().splitlines()[-1]
    assert result == "RESULT identical_flagged=0 slowed_caught=3 pairs=3 other_flagged=0"
