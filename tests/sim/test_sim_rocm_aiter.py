"""AMD deployments with and without AITER's kernels (ROCm/aiter).

SGLang's ROCm images set SGLANG_USE_AITER=1 and a recipe may switch it off; vLLM runs AITER only
with VLLM_ROCM_USE_AITER=1. Without it the experts run Triton's fused MoE, which the tables give
their own row (data/efficiency.yaml, ``rocm_aiter: false``): a MoE model decodes slower there,
a dense one does not change."""

from __future__ import annotations

import dataclasses

from sim_helpers import catalog, config

from infermatrix.sim.config import SimConfig
from infermatrix.sim.operators import StepModel
from infermatrix.sim.tables import default_tables

AMD_SGLANG = "deepseek-r1-0528/mi300x-sglang-fp8"


def _recipe_config(env: dict[str, str], engine: str | None = None) -> SimConfig:
    cat = catalog()
    recipe = cat.recipes[AMD_SGLANG]
    update: dict[str, object] = {"env": env}
    if engine:
        update["engine"] = recipe.engine.model_copy(update={"name": engine})
    variant = dataclasses.replace(cat, recipes={**cat.recipes,
                                                "x/variant": recipe.model_copy(update=update)})
    return SimConfig.from_recipe(variant, "x/variant")


def test_the_recipes_environment_says_whether_aiter_runs() -> None:
    assert _recipe_config({}).rocm_aiter  # SGLang's ROCm images turn it on
    assert _recipe_config({"SGLANG_USE_AITER": "1"}).rocm_aiter
    off = _recipe_config({"SGLANG_USE_AITER": "0"})
    assert not off.rocm_aiter and off.summary()["rocm_aiter"] is False  # `sim info` says so
    assert not _recipe_config({}, engine="vllm").rocm_aiter  # vLLM's default is off
    assert _recipe_config({"VLLM_ROCM_USE_AITER": "1"}, engine="vllm").rocm_aiter
    nvidia = SimConfig.from_recipe(catalog(), "deepseek-r1-0528/h200-sglang-fp8")
    assert nvidia.rocm_aiter and "rocm_aiter" not in nvidia.summary()  # it only picks AMD rows


def test_experts_without_aiter_take_the_generic_row_and_decode_slower() -> None:
    tables = default_tables()
    with_aiter = tables.operator("grouped_gemm", "MI300X", "amd", "fp8", engine="sglang")
    without = tables.operator("grouped_gemm", "MI300X", "amd", "fp8", engine="sglang",
                              rocm_aiter=False)
    assert with_aiter.rocm_aiter is None and without.rocm_aiter is False
    assert without.floor_us > with_aiter.floor_us
    # NVIDIA rows never depend on it
    assert (tables.operator("grouped_gemm", "H200", "nvidia", "fp8", rocm_aiter=False)
            == tables.operator("grouped_gemm", "H200", "nvidia", "fp8"))

    def step(model: str, aiter: bool, seqs: int) -> float:
        cfg = config("MI300X", model, "fp8", tp=8, engine="sglang", rocm_aiter=aiter)
        return StepModel(cfg).step_time(seqs, seqs, 1000 * seqs, 1000 * seqs)

    for seqs in (1, 16, 64):
        assert step("deepseek-r1-0528", False, seqs) > 1.3 * step("deepseek-r1-0528", True, seqs)
    assert step("llama-3.1-70b-instruct", False, 8) == step("llama-3.1-70b-instruct", True, 8)


def test_builds_of_february_2025_without_aiter_take_the_hopper_measured_triton_share() -> None:
    """vLLM before 0.8.0 and SGLang before 0.4.4 on ROCm ran the same Triton fused MoE source
    as on NVIDIA (block-FP8 experts): their rows carry the share vLLM PR #13932 measured on
    H100, with the MI300X floor of the later row without AITER. Later builds without AITER,
    and builds with it, keep their own rows."""
    t = default_tables()

    def experts(engine: str, version: str, aiter: bool = False) -> object:
        return t.operator("grouped_gemm", "MI300X", "amd", "fp8", engine=engine,
                          engine_version=version, rocm_aiter=aiter)
    hopper = t.operator("grouped_gemm", "H200", "nvidia", "fp8", engine="vllm",
                        engine_version="0.7.3")
    later = experts("sglang", "0.5.7")
    for engine, version in (("vllm", "0.7.3.dev138"), ("sglang", "0.4.2.post4"),
                            ("sglang", "0.4.3")):
        old = experts(engine, version)
        assert (old.compute_eff, old.memory_eff, old.tokens_half) == (
            hopper.compute_eff, hopper.memory_eff, hopper.tokens_half), (engine, version)
        assert old.floor_us == later.floor_us and old.rocm_aiter is False
        assert experts(engine, version, aiter=True).rocm_aiter is None  # AITER: the AMD row
    assert later.before is None and later.compute_eff > hopper.compute_eff
    assert experts("vllm", "0.8.0") == later == experts("sglang", "0.4.4")

    def prefill(version: str) -> float:
        cfg = config("MI300X", "deepseek-r1-0528", "fp8", tp=8, engine="sglang",
                     engine_version=version, rocm_aiter=False)
        return StepModel(cfg).step_time(3200, 1, 3200, 3200 * 1600)
    assert prefill("0.4.2.post4") > 1.5 * prefill("0.5.7")  # compute-bound experts
