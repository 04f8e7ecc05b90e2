"""SGLang's speculative and attention-DP host costs (infermatrix/sim/spec_cost.py).

SGLang runs EAGLE/MTP without its overlap scheduler unless spec v2 is on
(SGLANG_ENABLE_SPEC_V2), so every step's host work adds to the GPU's time, and a speculative
step's host work is larger than a plain one's; under attention DP the ranks exchange their batch
metadata before every step (off with SGLANG_SCHEDULER_SKIP_ALL_GATHER). Other engines keep
their own overlap."""

from __future__ import annotations

import dataclasses

import pytest
from sim_helpers import catalog, config

from infermatrix.sim.config import SimConfig
from infermatrix.sim.operators import StepModel
from infermatrix.sim.tables import default_tables

DSV3 = "deepseek-v3-0324"


def _decode(cfg: SimConfig, seqs: int, draft: int = 0) -> float:
    return StepModel(cfg).step_time(seqs, seqs, 600 * seqs, 600 * seqs, draft * seqs)


def test_sglang_speculative_steps_pay_their_host_work_on_top_of_the_gpu() -> None:
    eng = default_tables().engines["sglang"]
    assert eng.overlap and eng.spec_overlap is False
    assert eng.spec_step_us is not None and eng.spec_step_us > eng.step_us
    v1 = config("B200", DSV3, "fp8", tp=8, engine="sglang", spec_draft_tokens=3,
                spec_acceptance=0.8)
    v2 = dataclasses.replace(v1, spec_v2=True)
    for seqs in (1, 8, 64):
        added = _decode(v1, seqs, 3) - _decode(v2, seqs, 3)
        # without the overlap scheduler the host work (~1 ms a step) is no longer hidden
        assert 0.5e-3 < added < 2.0e-3, (seqs, added)
    # a prefill step of the same server does not overlap either (a server-wide switch)
    m1, m2 = StepModel(v1), StepModel(v2)
    assert m1.step_time(2000, 1, 2000, 2e6) > m2.step_time(2000, 1, 2000, 2e6)


def test_plain_sglang_and_other_engines_keep_their_overlap() -> None:
    plain = config("B200", DSV3, "fp8", tp=8, engine="sglang")
    assert _decode(plain, 8) == _decode(dataclasses.replace(plain, spec_v2=True), 8)
    trt = config("B200", DSV3, "fp8", tp=8, engine="trtllm", spec_draft_tokens=3,
                 spec_acceptance=0.8)
    assert StepModel(trt).spec_overlap and StepModel(trt).overlap


def test_attention_dp_ranks_sync_their_batches_before_each_step() -> None:
    dpa = config("B200", DSV3, "fp8", tp=8, dp=8, attention_dp=True, engine="sglang",
                 spec_draft_tokens=3, spec_acceptance=0.8)
    skip = dataclasses.replace(dpa, dp_sync=False)
    assert StepModel(dpa).spec_host_fixed - StepModel(skip).spec_host_fixed == pytest.approx(
        default_tables().engines["sglang"].dp_sync_us * 1e-6)
    assert _decode(dpa, 8, 3) > _decode(skip, 8, 3)  # exposed: no overlap under spec v1
    # without attention DP there is nothing to sync
    tp = config("B200", DSV3, "fp8", tp=8, engine="sglang")
    assert StepModel(tp).host_fixed == StepModel(dataclasses.replace(tp, dp_sync=False)).host_fixed


def test_the_recipes_environment_switches_spec_v2_and_the_sync() -> None:
    cat = catalog()
    recipe_id = "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d"
    cfg = SimConfig.from_recipe(cat, recipe_id)  # its decode pool sets both
    assert cfg.spec_v2 and not cfg.dp_sync
    recipe = cat.recipes[recipe_id]
    pools = [p.model_copy(update={"env": {}}) for p in recipe.topology.pools]
    bare = recipe.model_copy(update={
        "env": {}, "topology": recipe.topology.model_copy(update={"pools": pools})})
    variant = dataclasses.replace(cat, recipes={**cat.recipes, "x/bare": bare})
    cfg = SimConfig.from_recipe(variant, "x/bare")
    assert not cfg.spec_v2 and cfg.dp_sync


def test_sim_info_says_which_applies() -> None:
    spec = config("B200", DSV3, "fp8", tp=8, engine="sglang", spec_draft_tokens=3,
                  spec_acceptance=0.8)
    assert spec.summary()["spec_v2"] is False
    assert "spec_v2" not in config("B200", DSV3, "fp8", tp=8, engine="sglang").summary()
    dpa = config("B200", DSV3, "fp8", tp=8, dp=8, attention_dp=True, engine="sglang")
    assert dpa.summary()["dp_sync"] is True
    assert "dp_sync" not in config("B200", DSV3, "fp8", tp=8, dp=8, attention_dp=True,
                                   engine="trtllm").summary()
