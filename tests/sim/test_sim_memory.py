"""Device memory and the KV cache it leaves: datasheet figures are binary (an "80 GB" H100 is
80 GiB, of which the process sees 79.22 GiB), and vLLM and TensorRT-LLM keep their profiled
activation peak and the memory outside torch beside the weights (vllm-project/vllm PR #10511's
memory profile of Llama 3 8B on an H100 at gpu-memory-utilization 0.9)."""

from __future__ import annotations

import pytest
from sim_helpers import catalog

from infermatrix.sim.config import SimConfig
from infermatrix.sim.engine_defaults import GIB


@pytest.mark.parametrize(("tp", "published_kv_gib"), [(1, 53.29), (2, 71.29 - 7.48 - 3.58 - 1.26)])
def test_vllm_kv_cache_is_what_its_memory_profile_reports(tp: int, published_kv_gib: float) -> None:
    cfg = SimConfig.from_parts(catalog(), "H100", "llama-3.1-8b-instruct", "bf16", tp=tp,
                               engine="vllm", memory_fraction=0.9)
    assert cfg.memory_bytes / GIB == pytest.approx(79.22, abs=0.1)
    assert cfg.kv_bytes_per_gpu / GIB == pytest.approx(published_kv_gib, rel=0.01)


def test_sglang_keeps_no_activation_reserve_inside_its_static_fraction() -> None:
    """SGLang's KV pool is what the device reports free after the weights, less (1 - static
    fraction) of the total: it loses the memory outside torch but keeps its activations outside
    the fraction, so the same share leaves it more KV than vLLM's utilisation does."""
    kw = dict(tp=1, memory_fraction=0.9)
    vllm = SimConfig.from_parts(catalog(), "H100", "llama-3.1-8b-instruct", "bf16", engine="vllm", **kw)
    sglang = SimConfig.from_parts(catalog(), "H100", "llama-3.1-8b-instruct", "bf16", engine="sglang",
                                  **kw)
    assert sglang.reserved_bytes == pytest.approx(1.79 * GIB, rel=0.01)
    assert sglang.kv_bytes_per_gpu - vllm.kv_bytes_per_gpu == pytest.approx(1.26 * GIB, rel=0.01)


def test_a_tight_deployment_keeps_the_kv_its_engine_ran_with() -> None:
    """DeepSeek-R1 FP8 on 4x B200 under SGLang at --mem-fraction-static 0.95 (InferenceX runs it
    at 32 concurrent 8K prompts, lengths 0.8-1x nominal): in decimal gigabytes the weights would
    leave ~3 GB of KV, too little for the 32 x 8.3K tokens the published run held on average;
    in GiB they leave enough."""
    cfg = SimConfig.from_parts(catalog(), "B200", "deepseek-r1-0528", "fp8", tp=4, engine="sglang",
                               memory_fraction=0.95, kv_dtype="fp8")
    assert cfg.kv_capacity_tokens >= 32 * (7373 + 922)


def test_tensorrt_llm_gives_kv_its_share_of_what_weights_and_activations_leave() -> None:
    """free_gpu_memory_fraction is a share of the memory left after the weights and the
    activations of TensorRT-LLM's own profiling pass."""
    cfg = SimConfig.from_parts(catalog(), "H100", "llama-3.1-70b-instruct", "fp8", tp=1,
                               engine="trtllm", kv_free_fraction=0.9)
    free = cfg.memory_bytes - cfg.weight_bytes_per_gpu - cfg.reserved_bytes
    assert cfg.reserved_bytes == pytest.approx(3.05 * GIB, rel=0.01)
    assert cfg.kv_bytes_per_gpu == pytest.approx(0.9 * free, rel=1e-6)


def test_gpt_oss_keeps_its_bf16_rest_beside_its_mxfp4_experts() -> None:
    """gpt-oss quantises only its routed experts to MXFP4 (4.25 bits a parameter); attention,
    router, embeddings and LM head stay BF16 (model card; config.json modules_to_not_convert).
    On one H100 the weights are experts × 4.25 / 8 + rest × 2 bytes, and the KV cache loses
    what the BF16 rest weighs beyond MXFP4."""
    cat = catalog()
    kw = dict(tp=1, engine="vllm", memory_fraction=0.9)
    cfg = SimConfig.from_parts(cat, "H100", "gpt-oss-120b", "mxfp4", **kw)
    experts = cfg.expert_params
    rest = cfg.total_params - experts
    assert cfg.weight_bytes_per_gpu == pytest.approx(experts * 4.25 / 8 + rest * 2)
    assert cfg.summary()["checkpoint_precision"] == "mxfp4 experts, bf16 rest"
    uniform_model = cat.models["gpt-oss-120b"].model_copy(update={"mixed_precision": {}})
    uniform = SimConfig.from_parts(cat, "H100", uniform_model, "mxfp4", **kw)
    assert uniform.weight_bytes_per_gpu == pytest.approx(cfg.total_params * 4.25 / 8)
    lost_tokens = rest * (2 - 4.25 / 8) / cfg.kv_bytes_per_token
    assert uniform.kv_capacity_tokens - cfg.kv_capacity_tokens == pytest.approx(lost_tokens, abs=2)
    # on Hopper the same checkpoint runs weight-only (w4a16): the same bytes
    hopper = SimConfig.from_parts(cat, "H100", "gpt-oss-120b", "w4a16", **kw)
    assert hopper.weight_bytes_per_gpu == pytest.approx(cfg.weight_bytes_per_gpu)


def test_deepseek_v4_nvfp4_holds_its_fp8_rest_on_every_attention_dp_rank() -> None:
    """nvidia/DeepSeek-V4-Pro-NVFP4 re-quantises only the routed experts; attention and shared
    experts stay FP8 (NVIDIA/TensorRT-LLM PR #16276), and under attention DP each rank holds all
    of them: the AA GB300 DEP8 decode rank carries the whole rest at 1 byte a parameter."""
    cfg = SimConfig.from_recipe(catalog(), "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8")
    assert cfg.attention_dp and cfg.dense_shards == 1 and cfg.expert_shards == 8
    experts = cfg.expert_params
    draft = 1 + 1 / cfg.layers if cfg.spec_draft_tokens else 1.0
    assert cfg.weight_bytes_per_gpu == pytest.approx(
        (experts * 0.5625 / 8 + (cfg.total_params - experts) * 1.0) * draft)


def test_mla_down_projections_are_held_whole_on_every_gpu() -> None:
    """DeepSeek's query and KV down-projections (7,168 -> 1,536 and -> 576, 61 layers: 0.92 B
    parameters) are replicated on every GPU of the attention TP group, so TP8 holds all of them
    on each GPU, not an eighth: 7/8 of 0.92 GB of FP8 weights more a GPU than an even split."""
    cfg = SimConfig.from_parts(catalog(), "H200", "deepseek-r1-0528", "fp8", tp=8, engine="sglang")
    whole = 61 * 7168 * (1536 + 512 + 64)
    assert cfg.whole_params == whole
    even = (cfg.bytes_per_param * cfg.expert_params / cfg.expert_shards
            + cfg.rest_bytes_per_param * (cfg.total_params - cfg.expert_params) / cfg.dense_shards)
    assert cfg.weight_bytes_per_gpu - even == pytest.approx(cfg.rest_bytes_per_param * whole * 7 / 8)
    gqa = SimConfig.from_parts(catalog(), "H200", "llama-3.1-70b-instruct", "fp8", tp=8)
    assert gqa.whole_params == 0
