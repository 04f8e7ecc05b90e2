"""The simulator's experiment knobs (sim/variation.py): a step-time scale for chosen recipes and
a seeded per-night factor; bad values are one line, never a traceback."""

from __future__ import annotations

import pytest

from infermatrix.catalog.loader import load_catalog
from infermatrix.launch.virtual import measure_level
from infermatrix.plan.jobs import make_job
from infermatrix.sim.config import SimConfigError
from infermatrix.sim.variation import NOISE_VAR, SCALE_VAR, step_scale

RECIPE = "llama-3.1-70b-instruct/h200-vllm-fp8"


def test_the_knobs_parse_and_match_recipes() -> None:
    assert step_scale(RECIPE, {}) == 1.0
    assert step_scale(RECIPE, {SCALE_VAR: "1.25"}) == 1.25
    assert step_scale(RECIPE, {SCALE_VAR: "deepseek*=2,llama-3.1*=1.5"}) == 1.5
    assert step_scale("deepseek-r1-0528/x", {SCALE_VAR: "llama*=1.5"}) == 1.0
    night = {NOISE_VAR: "0.02@7"}
    assert step_scale(RECIPE, night) == step_scale(RECIPE, night) != 1.0  # seeded
    assert step_scale(RECIPE, night) != step_scale(RECIPE, {NOISE_VAR: "0.02@8"})
    assert abs(step_scale(RECIPE, night) - 1) < 0.2
    for env in ({SCALE_VAR: "nan"}, {SCALE_VAR: "llama*=0"}, {SCALE_VAR: "inf"},
                {NOISE_VAR: "0.01"}, {NOISE_VAR: "-1@2"}, {NOISE_VAR: "x@2"}):
        with pytest.raises(SimConfigError, match=r"^\$INFERMATRIX_SIM_"):
            step_scale(RECIPE, env)


def test_a_tenth_slower_steps_give_a_tenth_less_throughput(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cat = load_catalog(None)
    job = make_job(cat, "adhoc", RECIPE, "smoke-1k-128", "h200-dgx", [4], None)
    before = measure_level(cat, job, 4)
    monkeypatch.setenv(SCALE_VAR, f"{RECIPE}={1 / 0.9}")
    after = measure_level(cat, job, 4)
    assert after["output_throughput"] / before["output_throughput"] == pytest.approx(0.9, rel=1e-3)
    assert after["median_ttft_ms"] > before["median_ttft_ms"]
