"""vLLM's FlashMLA sparse kernels pad a rank's query heads (infermatrix/sim/flashmla_sparse.py):
DeepSeek V3.2's sparse attention costs the padded heads' FLOPs under tensor parallelism."""

from __future__ import annotations

import pytest
from sim_helpers import config

from infermatrix.sim.flashmla_sparse import head_padding, padded_heads
from infermatrix.sim.operators import StepModel


@pytest.mark.parametrize(("heads", "hardware", "kv", "prefill", "padded"), [
    (16, "H200", "bf16", True, 64),     # TP8 on Hopper: the BF16 kernel takes multiples of 64
    (16, "H200", "bf16", False, 64),    # a BF16 cache decodes with the same kernel
    (128, "H100", "bf16", True, 128),
    (64, "GB300", "bf16", True, 128),   # Blackwell's BF16 kernel: multiples of 128
    (16, "B200", "bf16", True, 128),
    (64, "GB300", "fp8", False, 64),    # the FP8 decode kernel takes 64 or 128
    (16, "H200", "fp8", True, 64),      # below 32 heads an FP8 cache prefills with it too
    (16, "B200", "fp8", True, 64),
    (32, "B200", "fp8", True, 128),     # from 32 heads the BF16 prefill kernel again
])
def test_a_ranks_heads_are_padded_to_what_the_kernel_takes(
        heads: int, hardware: str, kv: str, prefill: bool, padded: int) -> None:
    assert padded_heads(heads, hardware, kv, prefill) == padded


def test_only_vllms_sparse_mla_on_nvidia_pays_it() -> None:
    assert head_padding("vllm", "mla-sparse", "nvidia", "H200", "bf16", 16, True) == 4.0
    for engine, attention, vendor in (("sglang", "mla-sparse", "nvidia"),
                                      ("vllm", "mla", "nvidia"),
                                      ("vllm", "mla-compressed", "nvidia"),
                                      ("vllm", "mla-sparse", "amd")):
        assert head_padding(engine, attention, vendor, "H200", "bf16", 16, True) == 1.0


def test_a_tp8_rank_scores_64_heads_under_vllm() -> None:
    """On Hopper a TP8 rank holds 16 of DeepSeek V3.2's 128 heads and an attention-DP rank all
    128: vLLM's kernel computes 64 on the first, so a prefill pair costs a TP8 rank half what it
    costs the DP rank, not an eighth; SGLang's (no padding modelled) an eighth."""
    def pair_cost(engine: str, **parallel: object) -> float:
        cfg = config("H200", "deepseek-v3.2", "fp8", engine=engine, **parallel)
        return StepModel(cfg).pre_s_pair

    dp_rank = {"tp": 8, "dp": 8, "attention_dp": True}
    assert pair_cost("vllm", tp=8) == pytest.approx(pair_cost("vllm", **dp_rank) / 2)
    assert pair_cost("sglang", tp=8) == pytest.approx(pair_cost("sglang", **dp_rank) / 8)
