"""The per-operator step model: engine semantics from the recipe and the physics each operator
adds (virtual time, no HTTP)."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from sim_helpers import catalog, config

from infermatrix.sim import SimConfig
from infermatrix.sim.config import SimConfigError
from infermatrix.sim.names import engine_name, resolve
from infermatrix.sim.operators import StepModel
from infermatrix.sim.perf import PerfModel
from infermatrix.sim.tables import default_tables

DEP8 = "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8"


def test_trtllm_limits_count_per_attention_dp_rank() -> None:
    cfg = SimConfig.from_recipe(catalog(), DEP8)
    assert cfg.attention_dp and cfg.dp == 8
    assert cfg.max_num_seqs == 8 * 192  # max_batch_size 192 per rank: the instance admits 1,536
    assert cfg.max_num_batched_tokens == 8 * 768
    assert cfg.prefill is not None and cfg.prefill.max_num_seqs == 4 * 128
    # SGLang's max-running-requests is for the whole instance
    sg = config("H200", model="deepseek-r1-0528", tp=8, dp=8, ep=8, attention_dp=True,
                engine="sglang", max_num_seqs=256)
    assert sg.max_num_seqs == 256


def test_moe_decode_pays_kernel_floors_at_batch_one_and_expert_reads_as_batch_grows() -> None:
    perf = PerfModel(SimConfig.from_recipe(catalog(), "deepseek-r1-0528/h200-sglang-fp8"))
    one = perf.decode_time(1, 2000)
    # a single decoding sequence still takes milliseconds: ~0.2 ms of kernels per MoE layer
    assert 0.010 < one < 0.030, one
    # 64 sequences touch almost every expert: the step streams most of the 671 GB
    assert perf.weights_s(64) > 5 * perf.weights_s(1)
    assert perf.decode_time(64, 64 * 2000) > 1.2 * one


def test_sparse_attention_reads_topk_not_the_whole_context() -> None:
    dense = StepModel(config("H200", model="deepseek-r1-0528", tp=8))
    sparse = StepModel(config("H200", model="deepseek-v3.2", tp=8))
    ctx = 128_000

    def grow(m: StepModel) -> float:
        return (m._attention_layer(8, 8, 8 * ctx, 8 * ctx, True)
                / m._attention_layer(8, 8, 8 * 4000, 8 * 4000, True))

    # 32x more context: MLA attention grows ~32x, DSA grows only with the small indexer keys
    assert grow(dense) > 20
    assert grow(sparse) < 0.5 * grow(dense)


def test_deepseek_v4_indexer_scores_compressed_entries_of_its_csa_layers() -> None:
    # the same model with V3.2's indexer (every position, every layer) and with V4's
    v4 = SimConfig.from_recipe(catalog(), DEP8).prefill
    assert v4 is not None and v4.attention == "mla-compressed"
    compressed, dsa = StepModel(v4), StepModel(replace(v4, attention="mla-sparse"))
    arch = default_tables().architectures
    assert abs(compressed.index_s_pos / dsa.index_s_pos - arch.csa_share / arch.csa_ratio) < 1e-9
    # an agentic turn: 600 new tokens on a 39K-token cached prefix, where the indexer dominated
    new, prior = 600, 39_000
    pairs = new * prior + new * (new + 1) / 2
    a_c = compressed._attention_layer(new, 1, prior + new, pairs, False)
    a_d = dsa._attention_layer(new, 1, prior + new, pairs, False)
    assert a_c < 0.5 * a_d


def test_sliding_window_layers_cap_attention() -> None:
    cfg = config("H200", model="gpt-oss-120b", precision="w4a16", tp=1)
    sliding, full = StepModel(cfg), StepModel(replace(cfg, attention="gqa"))
    ctx = 64_000
    ratio = (sliding._attention_layer(64, 64, 64 * ctx, 64 * ctx, True)
             / full._attention_layer(64, 64, 64 * ctx, 64 * ctx, True))
    assert 0.45 < ratio < 0.55  # half the layers stop at 128 positions


def test_collectives_grow_with_group_size_and_leave_the_node_slower() -> None:
    def comm(tp: int, hw: str = "H200") -> float:
        return StepModel(config(hw, tp=tp)).comm_fixed

    assert comm(2) < comm(4) < comm(8)
    # an NVL72 rack keeps 16 GPUs on NVLink; 16 HGX GPUs cross InfiniBand
    assert comm(16, "GB200") < comm(16, "H200")


def test_experts_split_by_ep_under_attention_tp_dispatch_nothing() -> None:
    """Under attention TP every GPU holds every token: EP experts are combined by the TP
    all-reduce, as tensor-split experts are (SGLang's default --moe-a2a-backend none). Tokens
    cross GPUs in an all-to-all only with an all-to-all backend or under attention DP."""
    def comm(**kw: object) -> tuple[float, float]:
        m = StepModel(config("B200", model="deepseek-r1-0528", tp=8, engine="sglang", **kw))
        return m.comm_fixed, m.comm_s_tok

    assert comm(ep=8) == comm()
    with_a2a = comm(ep=8, moe_a2a=True)
    assert with_a2a[0] > comm()[0] and with_a2a[1] > comm()[1]
    # attention DP (one GPU a rank: no TP all-reduce) still dispatches and combines
    assert comm(dp=8, ep=8, attention_dp=True)[0] > 0
    # a recipe's all-to-all backend reaches the model
    recipe = SimConfig.from_recipe(catalog(), "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d")
    assert recipe.prefill is not None and recipe.prefill.moe_a2a and recipe.moe_a2a


def test_attention_dp_waits_for_the_busiest_rank() -> None:
    cfg = config("H200", model="deepseek-r1-0528", tp=8, dp=8, ep=8, attention_dp=True,
                 engine="trtllm")
    m = StepModel(cfg)
    ctx = 100_000
    even = m.step_time(8, 8, 8 * ctx, 8 * ctx)
    uneven = m.step_time(9, 9, 9 * ctx, 9 * ctx)  # one rank now holds two sequences
    assert uneven > 1.05 * even


def test_tables_cover_known_hardware_and_tuning_covers_the_rest() -> None:
    t = default_tables()
    assert "DeepGEMM" in t.operator("gemm", "H200", "nvidia", "fp8").source
    assert t.operator("gemm", "B200", "nvidia", "fp4").hardware != "vendor:nvidia"
    cpu = t.operator("gemm", "CPU", "cpu", "bf16")
    assert "tuning.py" in cpu.source and cpu.compute_eff == 0.55
    assert t.acceptance_rate("mtp", "random") < t.acceptance_rate("mtp", "chat")
    # a row dated by an engine's version serves that engine's builds from it on (an image tag
    # reads as its version), and nothing else
    def experts(engine: str, version: str | None) -> str | None:
        return t.operator("grouped_gemm", "H200", "nvidia", "fp8", engine=engine,
                          engine_version=version).since
    assert experts("sglang", "v0.5.12-cu130") == experts("sglang", "0.5.9") == "0.5.9"
    # the build a recipe names is what `sim info` shows and the tables are read with
    recipe = SimConfig.from_recipe(catalog(), "deepseek-r1-0528/h200-sglang-fp8").summary()
    assert (recipe["engine"], recipe["engine_version"]) == ("sglang", "0.4.9.post1")
    for engine, version in (("sglang", "0.4.3.post2"), ("sglang", "0.5"), ("sglang", None),
                            ("sglang", "unstated"), ("vllm", "0.5.12")):
        assert experts(engine, version) is None, (engine, version)


def test_a_before_row_serves_an_engines_builds_older_than_its_version() -> None:
    """The Triton fused MoE rows of early 2025 date the builds from above: vLLM before 0.8.0
    (its nightlies included) and SGLang before 0.4.4; later builds, another engine and an
    unknown version keep the undated rows, and SGLang's 2026 builds their ``since`` row."""
    t = default_tables()

    def experts(engine: str, version: str | None) -> tuple[str | None, str | None]:
        row = t.operator("grouped_gemm", "H200", "nvidia", "fp8", engine=engine,
                         engine_version=version)
        return row.since, row.before
    assert experts("vllm", "0.7.4.dev181") == experts("vllm", "0.7.3") == (None, "0.8.0")
    assert experts("sglang", "0.4.3.post2") == experts("sglang", "0.4.1") == (None, "0.4.4")
    for engine, version in (("vllm", "0.8.0"), ("vllm", "0.11.0"), ("vllm", None),
                            ("vllm", "unstated"), ("sglang", "0.4.4"), ("sglang", "0.5.3"),
                            ("trtllm", "0.7.3")):
        assert experts(engine, version) == (None, None), (engine, version)
    assert experts("sglang", "0.5.12") == ("0.5.9", None)


def test_the_early_2025_triton_moe_takes_the_time_vllm_measured() -> None:
    """vLLM PR #13932 timed the Triton fused MoE of February 2025 for DeepSeek-V3's block FP8
    experts at TP8: 1,893 us for 1,024 tokens and 2,819 us for 2,048 (H100; the H200 has the
    same tensor cores, and at these sizes the kernel is compute-bound). A vLLM 0.7 deployment's
    MoE layer takes that; a 0.11 build (the undated row) well under it."""
    old = StepModel(config("H200", model="deepseek-r1-0528", tp=8, engine="vllm",
                           engine_version="0.7.3"))
    new = StepModel(config("H200", model="deepseek-r1-0528", tp=8, engine="vllm",
                           engine_version="0.11.0"))
    for tokens, measured in ((1024, 1893e-6), (2048, 2819e-6)):
        assert old.routed.layer_s(tokens) == pytest.approx(measured, rel=0.15)
        assert new.routed.layer_s(tokens) < 0.6 * measured


def test_vllm_runs_tritons_moe_where_tp_splits_the_experts_8_ways_from_0_12() -> None:
    """vLLM PR #29346 (v0.12.0): block-FP8 experts split 8 or more ways by tensor parallelism
    leave DeepGEMM's grouped GEMM for Triton's fused MoE, SGLang's kernel. Earlier builds,
    smaller splits and expert parallelism keep the DeepGEMM (undated) row; a decoding MoE layer
    streams its experts about twice as fast on the Triton row."""
    t = default_tables()

    def since(version: str, moe_tp: int) -> str | None:
        return t.operator("grouped_gemm", "H200", "nvidia", "fp8", engine="vllm",
                          engine_version=version, moe_tp=moe_tp).since
    assert since("0.13.0", 8) == since("0.12.0", 16) == "0.12.0"
    assert since("0.13.0", 4) is since("0.11.0", 8) is since("0.13.0", 1) is None
    assert t.operator("grouped_gemm", "H200", "nvidia", "fp8", engine="sglang",
                      engine_version="0.5.12", moe_tp=8).since == "0.5.9"

    def moe(version: str, **kw: int) -> float:
        cfg = config("H200", model="deepseek-r1-0528", tp=8, engine="vllm",
                     engine_version=version, **kw)
        return StepModel(cfg).routed.layer_s(64)
    assert moe("0.13.0") < 0.6 * moe("0.11.0")
    assert moe("0.13.0", ep=8) == moe("0.11.0", ep=8)


MEASUREMENTS = Path(__file__).resolve().parents[2] / "docs" / "measurements"


def test_four_bit_experts_on_hopper_take_their_kernels_rows() -> None:
    """gpt-oss's MXFP4 experts on Hopper: vLLM's wheels from 0.10.1 to 0.11.1 run Marlin, from
    0.12.0 the triton_kernels they vendor; both fill a 16-row tile at a few tokens an expert.
    TensorRT-LLM, SGLang (whose kernel depends on the model) and older vLLM builds keep the
    NVIDIA row."""
    t = default_tables()

    def row(engine: str, version: str, hardware: str = "H100"):  # type: ignore[no-untyped-def]
        return t.operator("grouped_gemm", hardware, "nvidia", "w4a16", engine=engine,
                          engine_version=version)
    marlin, triton = row("vllm", "0.10.2"), row("vllm", "0.13.0")
    assert marlin.fixed_us > 0 and marlin.compute_eff == pytest.approx(0.27)
    assert row("vllm", "0.11.0", "H200").memory_eff < marlin.memory_eff  # the same TB/s
    assert triton.tile_rows == marlin.tile_rows == 16
    assert triton.compute_eff > 2 * marlin.compute_eff and triton.tokens_half == 64
    for engine, version in (("vllm", "0.7.3"), ("trtllm", "1.2"), ("sglang", "0.5.11")):
        assert row(engine, version).tile_rows is None, (engine, version)
    # a 232-token ShareGPT prefill of gpt-oss-120b (~7 tokens for each of 128 experts) streams
    # the experts' weights under a small-tile kernel; the NVIDIA row's 96-token ramp makes it
    # compute-bound
    def moe(engine: str, version: str) -> float:
        return StepModel(config("H100", model="gpt-oss-120b", precision="mxfp4", tp=1,
                                engine=engine, engine_version=version)).routed.layer_s(232)
    assert moe("trtllm", "1.2") > 1.5 * moe("vllm", "0.13.0")


@pytest.mark.parametrize(("name", "max_median"), [
    ("marlin-moe-h100-2026-11-28.json", 0.08), ("marlin-moe-h100-tp2-2026-11-28.json", 0.08),
    ("marlin-moe-h200-2026-11-28.json", 0.10), ("marlin-moe-h100-tp8-2026-11-28.json", 0.30),
    ("triton-moe-h100-2026-11-28.json", 0.08), ("triton-moe-h200-2026-11-28.json", 0.10)])
def test_the_w4a16_rows_read_the_kernel_times_measured_on_hopper(name: str,
                                                                  max_median: float) -> None:
    """docs/measurements/*-moe-*.json: vLLM's two MXFP4 MoE kernels on Hopper timed at
    gpt-oss's shapes (as vLLM pads them) from 1 to 16,384 tokens (scripts/measure_mxfp4_moe.py):
    Marlin on an H100 (TP1, TP2 and TP8 shares) and an H200, triton_kernels' matmul_ogs on both.
    The step model's expert layer under the vLLM build that runs each (0.10.2: Marlin,
    0.13.0: triton_kernels), at those shapes and without the activation and combine it adds,
    reads them within the stated median; TP8's narrow Marlin GEMMs run below the fitted share."""
    doc = json.loads((MEASUREMENTS / name).read_text())
    gpu = "H200" if "H200" in doc["device"] else "H100"
    version = "0.13.0" if doc.get("kernel") == "triton" else "0.10.2"
    errors = []
    for r in doc["results"]:
        tp, width = r.get("tp", 1), r.get("intermediate", 2944)
        hidden = r.get("hidden", doc.get("hidden"))
        m = StepModel(config(gpu, model=r["model"], precision="mxfp4", tp=tp, engine="vllm",
                             engine_version=version))
        scale = hidden * width / (2880 * 2880 / tp)  # measured over modelled params
        experts = m.routed
        experts.s_assign *= scale
        experts.w_expert *= scale
        experts.act_s_assign = 0.0
        measured = (r["gate_up"]["ms"] + r["down"]["ms"]) * 1e-3
        errors.append(abs(experts.layer_s(r["tokens"]) / measured - 1))
    assert len(errors) >= 14
    assert statistics.median(errors) <= max_median, sorted(errors)


def test_a_kernel_that_picks_its_tile_pads_an_expert_by_half_its_tokens() -> None:
    """With a row's ``tile_rows``, a touched expert's t tokens cost max(tile, t + min(t / 2,
    tokens_half)) rows of compute: one tile at a few tokens, half again in the middle (the
    tile the next size up), tokens_half rows at many. Without it, t + tokens_half always."""
    m = StepModel(config("H100", model="gpt-oss-120b", precision="mxfp4", tp=1,
                         engine="vllm", engine_version="0.10.2")).routed
    m.act_s_assign = m.fixed = 0.0  # the compute term alone: no memory bound, no
    m.w_expert, m.floor, m.skew = 0.0, 0.0, 1.0  # floor or fixed time, no skew
    m.miss = 0.0  # every expert touched by any token
    experts, k = m.experts, m.k
    assert m.half == 32

    def rows_per_expert(tokens: int) -> float:
        return m.layer_s(tokens) / (m.s_assign * experts)
    for t, rows in ((2, 16), (40, 60), (1024, 1024 + 32)):
        assert rows_per_expert(t * experts // k) == pytest.approx(rows)
    m.tile = None
    assert rows_per_expert(2 * experts // k) == pytest.approx(2 + 32)


def test_mla_down_projections_run_whole_on_every_gpu() -> None:
    """DeepSeek's query and KV down-projections (hidden -> 1,536 and -> 512 + 64) are not split
    by tensor parallelism (engines replicate them); only the heads' projections are. So a TP8
    GPU streams 2,112 x 7,168 of them whole plus an eighth of the rest."""
    arch = default_tables().architectures
    whole = 7168 * (arch.mla_q_lora + arch.mla_latent + arch.mla_rope)

    def weights(tp: int) -> float:  # B200: no measured profile, the table path
        return StepModel(config("B200", model="deepseek-r1-0528", precision="nvfp4", tp=tp)).attn_proj_w
    # weights(tp) = (split / tp + whole) x seconds a parameter: solve for the two parts
    four, eight = weights(4), weights(8)
    split, kept = 8 * (four - eight), 2 * eight - four
    assert kept / (kept + split) == pytest.approx(whole / (whole + _mla_split_params(arch)),
                                                  rel=1e-9)
    # the measured-profile path multiplies the same whole GEMM on every GPU
    fit = StepModel(config("H200", model="deepseek-r1-0528", tp=8))
    assert fit.profile_gemms is not None
    assert fit.profile_gemms.attn_gemms[0] == (arch.mla_q_lora + arch.mla_latent + arch.mla_rope, 7168)


def _mla_split_params(arch) -> float:  # type: ignore[no-untyped-def]
    """DeepSeek-V3's per-head projections of one layer: q up, kv up, output (128 heads)."""
    heads = 128
    return (arch.mla_q_lora * heads * arch.mla_qk_head
            + arch.mla_latent * heads * (arch.mla_qk_head - arch.mla_rope + arch.mla_v_head)
            + heads * arch.mla_v_head * 7168)


def test_the_moe_combine_writes_and_reads_each_pairs_hidden_state() -> None:
    """Summing a token's k expert outputs: each (token, expert) pair's down projection is
    written at the full hidden width (7,168 for DeepSeek) and read back, 2 x 7,168 x 2 bytes a
    pair. Experts split by TP give every GPU every pair; EP8 gives each an eighth of them.
    A 8K-token prefill step at TP8 pays it in every MoE layer."""
    def model(**kw: int) -> StepModel:
        return StepModel(config("H200", model="deepseek-r1-0528", tp=8, **kw))
    tp, ep = model(), model(ep=8)
    elem = default_tables().operator("elementwise", "H200", "nvidia")
    pair_s = 2 * 7168 * 2 / (tp.cfg.hbm_bw * elem.memory_eff)
    assert tp.routed.act_s_assign - ep.routed.act_s_assign == pytest.approx(pair_s * (1 - 1 / 8))
    assert tp.routed.act_s_assign > pair_s  # plus the gated activation's share
    assert tp.routed.layer_s(8192) > 8192 * 8 * pair_s


def test_narrow_heads_prefill_at_fewer_flops_a_second() -> None:
    """A prefill score's softmax exponential does not shrink with the head: FlashAttention-3 on
    an H100 runs 497 TFLOP/s with 64-wide heads where 128-wide ones reach 648 (its paper's
    forward BF16 figures at 16K). gpt-oss's 64 x 64 heads against Llama 3.1 8B's 32 x 128."""
    def per_flop(model: str, precision: str, heads: int, head_dim: int) -> float:
        m = StepModel(config("H100", model=model, precision=precision, tp=1))
        return m.pre_s_pair / (4 * heads * head_dim)
    ratio = per_flop("gpt-oss-20b", "mxfp4", 64, 64) / per_flop("llama-3.1-8b-instruct", "bf16", 32, 128)
    assert ratio == pytest.approx(648 / 497, rel=0.02)


def test_overrides_replace_the_recipes_speculative_decoding() -> None:
    cfg = SimConfig.from_recipe(catalog(), DEP8, spec_draft_tokens=1, spec_acceptance=0.5)
    assert (cfg.spec_draft_tokens, cfg.spec_acceptance) == (1, 0.5)
    plain = SimConfig.from_recipe(catalog(), DEP8, dataset="random")
    assert plain.spec_draft_tokens == 3
    assert plain.spec_acceptance == default_tables().acceptance_rate("mtp", "random")


def test_hardware_and_models_are_found_by_their_other_names() -> None:
    """A table written from a vendor's page names hardware and models as the page does: in
    another case, by display name or Hugging Face id. Each resolves to the one catalog entry;
    a name that fits none is still an error."""
    cat = catalog()
    plain = SimConfig.from_parts(cat, "H100", "llama-3.1-70b-instruct", "fp8", tp=2)
    for hw, model in (("h100", "meta-llama/Llama-3.1-70B-Instruct"),
                      ("H100 SXM", "Llama 3.1 70B Instruct")):
        other = SimConfig.from_parts(cat, hw, model, "fp8", tp=2)
        assert (other.hardware, other.model) == ("H100", "llama-3.1-70b-instruct")
        assert other.kv_capacity_tokens == plain.kv_capacity_tokens
    with pytest.raises(SimConfigError, match="unknown hardware"):
        SimConfig.from_parts(cat, "H9000", "llama-3.1-70b-instruct", "fp8")


@pytest.mark.parametrize("name,want", [
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "llama-4-maverick"),
    ("Llama 4 Maverick", "llama-4-maverick"),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout"),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8", "qwen3-coder-480b-a35b"),
    ("moonshotai/Kimi-K2-Instruct", "kimi-k2-instruct"),
    ("moonshotai/Kimi-K2-Instruct-0905", "kimi-k2-instruct"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b-instruct"),
    ("Mixtral-8x7B", "mixtral-8x7b-instruct"),
    ("meta-llama/Llama-2-70b-chat-hf", "llama-2-70b-chat"),
    ("llama2-70b", "llama-2-70b-chat"),
    ("zai-org/GLM-4.5-FP8", "glm-4.5"),
    ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b-instruct"),
])
def test_model_names_as_published_tables_write_them_resolve(name: str, want: str) -> None:
    """Models another table of published results names (Llama 4, Kimi K2, Mixtral, MLPerf's
    Llama 2 70B …), by checkpoint, short name or MLPerf benchmark name, each to one entry."""
    assert resolve(catalog().models, name, "model") == want


def test_names_as_vendor_pages_and_checkpoints_spell_them_resolve() -> None:
    """Board and vendor words, memory sizes, organisation prefixes and a checkpoint's
    quantisation or date suffix name the same entry; a different product (H100 PCIe, H100
    NVL) or a name that fits two entries does not resolve."""
    cat = catalog()
    cases = [("NVIDIA H200 SXM 141GB", "nvidia/DeepSeek-R1-0528-FP4", "FP8", "H200", "deepseek-r1-0528", "fp8"),
             ("AMD Instinct MI300X", "amd/Llama-3.1-70B-Instruct-FP8-KV", "fp8", "MI300X", "llama-3.1-70b-instruct", "fp8"),
             ("8x H100", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "FP8", "H100", "qwen3-235b-a22b", "fp8"),
             ("GB200-NVL72", "deepseek-ai/DeepSeek-R1", "NVFP4", "GB200", "deepseek-r1-0528", "nvfp4"),
             ("A100-SXM4-80GB", "meta-llama/Llama-3.3-70B-Instruct", "BF16", "A100", "llama-3.3-70b-instruct", "bf16")]
    for hw, model, precision, *want in cases:
        cfg = SimConfig.from_parts(cat, hw, model, precision, tp=8)
        assert [cfg.hardware, cfg.model, cfg.precision] == want, hw
    ascend = SimConfig.from_parts(cat, "Atlas 800I A3", "DeepSeek-V3.2", "W8A8", tp=16)
    assert (ascend.hardware, ascend.precision) == ("Ascend-910C", "w8a8-int8")
    for other_product in ("H100 PCIe", "H100 NVL", "H9000"):
        with pytest.raises(SimConfigError, match="unknown hardware"):
            SimConfig.from_parts(cat, other_product, "gpt-oss-120b", "fp8")
    assert resolve({"a-7b": object(), "a-7b-chat": object()}, "org/A-7B-Instruct", "model") is None
    with pytest.raises(SimConfigError, match="unknown precision"):
        SimConfig.from_parts(cat, "H100", "gpt-oss-120b", "fp6")
    assert [engine_name(e) for e in ("TensorRT-LLM", "trt-llm", "SGLang", "vLLM", "tgi")] == [
        "trtllm", "trtllm", "sglang", "vllm", None]


def test_fp4_weights_without_fp4_tensor_cores_run_weight_only() -> None:
    """gpt-oss (MXFP4) on MI300X, or an FP4 checkpoint on Hopper through Marlin: the 4-bit
    weights are dequantised in the kernel, so they cost FP4 memory and bf16 compute, as the
    w4a16 precision does; hardware with FP4 tensor cores keeps FP4 compute."""
    cat = catalog()
    on_mi300x = SimConfig.from_parts(cat, "MI300X", "gpt-oss-120b", "mxfp4", engine="vllm")
    assert on_mi300x.matmul_dtype == "bf16"
    assert on_mi300x.bytes_per_param == pytest.approx(0.53125)
    on_h200 = SimConfig.from_parts(cat, "H200", "deepseek-v4-pro", "nvfp4", tp=8, engine="sglang")
    w4a16 = SimConfig.from_parts(cat, "H200", "deepseek-v4-pro", "w4a16", tp=8, engine="sglang")
    assert on_h200.matmul_dtype == w4a16.matmul_dtype == "bf16"
    assert SimConfig.from_parts(cat, "MI355X", "gpt-oss-120b", "mxfp4").matmul_dtype == "fp4"
    # MXFP4 against FP8 activations needs Blackwell's FP4 tensor cores: Hopper runs BF16
    assert SimConfig.from_parts(cat, "B200", "gpt-oss-120b", "mxfp4").matmul_dtype == "fp8"
    assert SimConfig.from_parts(cat, "H100", "gpt-oss-120b", "mxfp4").matmul_dtype == "bf16"


def test_unset_batch_limits_take_the_engines_own_defaults_for_the_accelerator() -> None:
    """vLLM allows 1,024 sequences on an H100 (8,192 tokens a step served, 16,384 offline) but
    256 on an A100; SGLang's chunked prefill grows with memory; TensorRT-LLM's LLM API allows
    2,048 sequences of 8,192 tokens. Under attention DP the defaults count per rank."""
    cat = catalog()

    def limits(hw: str, engine: str, **kw: object) -> tuple[int, int]:
        cfg = SimConfig.from_parts(cat, hw, "llama-3.1-8b-instruct", "bf16", engine=engine, **kw)
        return cfg.max_num_seqs, cfg.max_num_batched_tokens

    assert limits("H100", "vllm") == (1024, 8192)
    assert limits("H100", "vllm", offline=True) == (1024, 16384)
    assert limits("A100", "vllm") == (256, 2048)
    assert limits("H200", "sglang") == (2048, 8192)
    assert limits("B200", "sglang") == (2048, 16384)
    assert limits("H100", "trtllm") == (2048, 8192)
    assert limits("H100", "vllm", max_num_seqs=64, max_num_batched_tokens=4096) == (64, 4096)
    dep = SimConfig.from_parts(cat, "B200", "deepseek-r1-0528", "nvfp4", tp=4, dp=4, ep=4,
                               attention_dp=True, engine="trtllm")
    assert dep.max_num_seqs == 4 * 2048


def test_attention_uses_the_models_head_dim_not_hidden_over_heads() -> None:
    # Qwen3-235B projects 4,096 hidden onto 64 query heads of 128 (config.json head_dim), not
    # of 64: q and o are 4,096 x 8,192, and every attended position costs 4 x 64 x 128 FLOPs
    cfg = config("B200", model="qwen3-235b-a22b", precision="nvfp4", tp=4, ep=4, dp=4,
                 attention_dp=True, engine="trtllm")
    assert cfg.head_dim == 128
    model, flat = StepModel(cfg), StepModel(replace(cfg, head_dim=0))
    h = 4096
    real, guess = 2 * h * 64 * 128 + 2 * h * 4 * 128, 2 * h * h + 2 * h * 4 * 64
    assert model.attn_proj_w / flat.attn_proj_w == pytest.approx(real / guess)  # 2.0x
    assert model.attn_proj_s_tok / flat.attn_proj_s_tok == pytest.approx(real / guess)
    # twice the FLOPs a pair, run at the 128-wide heads' rate rather than the 64-wide guess's
    # (a score's exponential takes as long either way: 56 head-dim units, SOFTMAX_HEAD_DIM)
    assert model.pre_s_pair == pytest.approx(flat.pre_s_pair * (128 + 56) / (64 + 56))
    # a long prompt's attention costs half again the flat guess's
    pairs = 8192 * 8193 / 2
    assert model._attention_layer(8192, 1, 8192, pairs, False) > 1.45 * flat._attention_layer(
        8192, 1, 8192, pairs, False)
    # the catalog states it only where it differs (Llama: 8,192 / 64 = 128)
    assert config("H200", model="llama-3.1-70b-instruct", tp=8).head_dim == 0


def test_pipeline_parallelism_keeps_a_micro_batch_in_every_stage() -> None:
    """Under PP a step is one micro-batch's trip through every stage while the others fill the
    other stages. At batch 1 there is nothing to overlap: a token passes both stages in turn
    (one GPU's time for the whole model, plus the hand-off). At 256 sequences two
    micro-batches of 128 are in flight, so the step takes the trip of 128, and PP2 serves
    about what TP2 does on the same two GPUs, not what one GPU does."""
    import numpy as np

    one, pp2, tp2 = (PerfModel(config("H100", "llama-2-70b-chat", tp=tp, pp=pp))
                     for tp, pp in ((1, 1), (1, 2), (2, 1)))
    assert pp2.decode_time(1, 600) == pytest.approx(one.decode_time(1, 600), rel=0.02)
    assert pp2.decode_time(1, 600) > one.decode_time(1, 600)  # the hand-off
    trip = one.decode_time(128, 128 * 600)
    assert pp2.decode_time(256, 256 * 600) == pytest.approx(trip, rel=0.05)
    # (0.8: a decode step of 128 or 256 rows streams the same weights; the measured H100
    # GEMMs take barely longer at 256, e.g. the 70B shard's fp8 gate_up 24.4 vs 27.3 us)
    assert pp2.decode_time(256, 256 * 600) < 0.8 * one.decode_time(256, 256 * 600)
    assert pp2.decode_time(256, 256 * 600) < 1.25 * tp2.decode_time(256, 256 * 600)
    # one sequence's prompt passes the stages in turn: no overlap
    assert pp2.prefill_time(2048) == pytest.approx(one.prefill_time(2048), rel=0.02)
    # the decode phase at once equals the step-by-step calls (odd batch: uneven micro-batches)
    contexts = np.array([255 * 600, 255 * 601, 255 * 700])
    at_once = pp2.decode_times(255, contexts, 1)
    assert at_once.tolist() == [pp2.decode_time(255, int(c), 1) for c in contexts]


def test_a_mixed_checkpoint_streams_its_rest_at_the_rests_bytes() -> None:
    """gpt-oss's BF16 attention and dense weights stream at 2 bytes a parameter and its MXFP4
    experts at 4.25 bits, in decode's weight reads and in the measured profile's GEMMs
    (n × k × bytes)."""
    mixed = SimConfig.from_parts(catalog(), "H100", "gpt-oss-120b", "w4a16", tp=1)
    assert mixed.operator_profile  # H100's GEMMs are timed by its measured profile
    uniform = replace(mixed, non_expert_bytes_per_param=0.0, checkpoint_precision="")
    m, u = StepModel(mixed), StepModel(uniform)
    ratio = 2 / (4.25 / 8)
    assert m.attn_proj_w == pytest.approx(u.attn_proj_w * ratio)
    assert m.dense_w == pytest.approx(u.dense_w * ratio)
    assert m.routed.w_expert == pytest.approx(u.routed.w_expert)
    assert m.weights_s(1) > u.weights_s(1)
    # one token's projections read their weights: the BF16 ones take longer (gpt-oss has no
    # dense MLP once its embedding tables are out of the layers: only the projections tell)
    mixed_s, uniform_s = m._gemms(1)[0], u._gemms(1)[0]
    assert mixed_s > 1.5 * uniform_s, (mixed_s, uniform_s)
