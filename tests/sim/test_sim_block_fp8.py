"""Block-scaled FP8 checkpoints (catalog Model.fp8_block_scaled) on builds whose block-scaled
GEMM kernels the tables measured ("fp8_block" rows): SGLang before 0.4.4 ran DeepSeek's dense
FP8 linears through its Triton kernel at ~0.15 of the H200's FP8 peak (sgl-project/sglang PR
#3893), which caps the dense GEMMs' compute; decode sizes, per-tensor FP8 checkpoints and later
builds are unchanged."""

from __future__ import annotations

import pytest
from sim_helpers import config

from infermatrix.sim.operators import StepModel


def gemms(model: str, version: str, tokens: int) -> float:
    cfg = config("H200", model, "fp8", tp=8, engine="sglang", engine_version=version)
    return sum(StepModel(cfg)._gemms(tokens, sustained=True))


def test_the_catalog_says_which_fp8_checkpoints_are_block_scaled() -> None:
    assert config("H200", "deepseek-r1-0528", "fp8", tp=8).fp8_block_scaled
    assert config("H200", "qwen3-32b", "fp8").fp8_block_scaled
    assert not config("H200", "llama-3.1-70b-instruct", "fp8", tp=8).fp8_block_scaled


def test_sglang_0_4_3_prefills_deepseeks_dense_gemms_at_its_triton_kernels_rate() -> None:
    old, new = gemms("deepseek-r1-0528", "0.4.3.post2", 4096), gemms("deepseek-r1-0528", "0.5.12",
                                                                       4096)
    assert old > 2 * new
    # at that rate: the layer's dense FLOPs over 0.15 of the peak the serving step sustains
    cfg = config("H200", "deepseek-r1-0528", "fp8", tp=8, engine="sglang",
                 engine_version="0.4.3.post2")
    model = StepModel(cfg)
    shapes = model.profile_gemms.attn_gemms + model.profile_gemms.dense_gemms
    flops = sum(2 * 4096 * n * k for n, k in shapes)
    assert old == pytest.approx(flops / (0.15 * cfg.peak_flops * model.clock), rel=0.05)


def test_decode_per_tensor_checkpoints_and_other_engines_are_unchanged() -> None:
    assert gemms("deepseek-r1-0528", "0.4.3.post2", 4) == gemms("deepseek-r1-0528", "0.5.12", 4)
    assert (gemms("llama-3.1-70b-instruct", "0.4.3.post2", 4096)
            == gemms("llama-3.1-70b-instruct", "0.5.12", 4096))
    vllm = {v: sum(StepModel(config("H200", "deepseek-r1-0528", "fp8", tp=8, engine="vllm",
                                    engine_version=v))._gemms(4096, sustained=True))
            for v in ("0.7.3", "0.13.0")}
    assert vllm["0.7.3"] == vllm["0.13.0"]
