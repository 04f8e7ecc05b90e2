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
