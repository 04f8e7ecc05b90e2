"""The embedding and the LM head are not per-token GEMMs of every layer: the embedding is a
lookup, and the LM head one BF16 GEMM a step over the tokens the step samples (a prompt's last
position, each decoding sequence and its draft tokens), its weights streamed once."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sim_helpers import config

from infermatrix.sim.operators import StepModel
from infermatrix.sim.tables import default_tables


def _head_share(m: StepModel, step: float, *args: float, **kw: float) -> float:
    """How much of ``step`` (``m.step_time(*args, **kw)``) the LM head takes: the same step
    again with the head's weights gone (head_s then prices nothing)."""
    saved, m.lm_head.stream_s = m.lm_head.stream_s, 0.0
    try:
        return step - m.step_time(*args, **kw)  # type: ignore[arg-type]
    finally:
        m.lm_head.stream_s = saved


@pytest.mark.parametrize("hardware", ["H100", "B200"])  # measured GEMM profile; the tables
def test_a_prompt_chunk_prices_the_lm_head_once_not_per_token(hardware: str) -> None:
    """gpt-oss-20b (vocabulary 201,088 x hidden 2,880: 0.58 B parameters a table) prefilling
    8,192 tokens of one prompt: the head runs over its last position only."""
    cfg = config(hardware, model="gpt-oss-20b", precision="mxfp4", tp=1)
    assert (cfg.vocab_size, cfg.tied_embeddings) == (201088, False)
    m = StepModel(cfg)
    args = (8192, 1, 8192, 8192 * 8193 / 2)
    assert _head_share(m, m.step_time(*args), *args) == pytest.approx(m.head_s(1), rel=1e-9)
    assert m.head_s(8192) > 20 * m.head_s(1)


def test_the_tables_out_of_the_layers_save_a_prompts_head_gemm() -> None:
    """On the H100 (GEMMs timed by the measured profile) the same 8K prefill is faster than
    with both tables spread over every layer's dense GEMMs by about what 8,191 more rows
    through the head would cost, 2 x 0.58e9 x 8,191 FLOPs at the GEMM rate (its own dense
    remainder, which has no dense MLP, falls to the floor)."""
    cfg = config("H100", model="gpt-oss-20b", precision="mxfp4", tp=1)
    m, old = StepModel(cfg), StepModel(replace(cfg, vocab_size=0))
    args = (8192, 1, 8192, 8192 * 8193 / 2)
    saved, per_row = old.step_time(*args) - m.step_time(*args), m.head_s(8192) - m.head_s(1)
    assert 0.6 * per_row < saved < 1.2 * per_row, (saved, per_row)
    assert per_row == pytest.approx(2 * 201088 * 2880 * 8191 / (0.7 * 989e12), rel=0.3)


def test_a_decode_step_samples_one_token_a_sequence_and_streams_the_head_once() -> None:
    """64 decoding sequences: 64 rows through the head, whose 201,088 x 2,880 BF16 weights are
    read once for the step (not once a layer, not once a token)."""
    cfg = config("B200", model="gpt-oss-20b", precision="mxfp4", tp=1)
    m = StepModel(cfg)
    gemm = default_tables().operator("gemm", "B200", "nvidia", "bf16", cfg.tuning, cfg.engine)
    read_s = 201088 * 2880 * 2 / (cfg.hbm_bw * gemm.memory_eff)
    assert m.lm_head.stream_s == pytest.approx(read_s, rel=1e-9)
    assert m.head_s(64) == pytest.approx(max(read_s, 64 * m.lm_head.s_tok), rel=1e-9)
    args = (64, 64, 64 * 2000, 64 * 2000)
    assert _head_share(m, m.step_time(*args), *args) == pytest.approx(m.head_s(64), rel=1e-9)
    # the memory floor holds the head once beside every layer's weights
    old = StepModel(replace(cfg, vocab_size=0))
    layers_s = m.weights_s(64) - m.lm_head.stream_s
    assert layers_s < old.weights_s(64)
    # ... and the decode phase's vectorised steps agree with the single ones
    steps = m.decode_steps(64, np.array([64 * 2000.0]))
    assert steps[0] == pytest.approx(m.step_time(*args), rel=1e-12)


def test_draft_tokens_are_verified_and_each_draft_pass_runs_the_head() -> None:
    """Under MTP/EAGLE the verify step computes logits for every sequence's token and its
    drafts, and each draft pass samples once a sequence (DeepSeek's MTP shares the head)."""
    m = StepModel(config("B200", model="deepseek-r1-0528", precision="nvfp4", tp=8))
    args = (16, 16, 16 * 1000, 16 * 1000)
    head = _head_share(m, m.step_time(*args, draft_tokens=32), *args, draft_tokens=32)
    assert head == pytest.approx(m.head_s(16 + 32) + 2 * m.head_s(16), rel=1e-9)


def test_a_model_without_a_vocabulary_keeps_its_tables_in_the_layers() -> None:
    """Without vocab_size nothing changes: the tables' parameters stay in every layer's dense
    GEMMs and no head is priced. With it, the dense weights shrink by exactly the two tables
    (one where tied) spread over the layers."""
    cfg = config("H200", model="llama-3.1-8b-instruct", precision="bf16", tp=1)
    assert cfg.vocab_size == 128256
    known, unknown = StepModel(cfg), StepModel(replace(cfg, vocab_size=0))
    tied = StepModel(replace(cfg, tied_embeddings=True))
    assert unknown.head_s(64) == 0.0 and unknown.lm_head.stream_s == 0.0
    assert unknown.weights_s(1) == unknown.layers * (
        unknown.attn_proj_w + unknown.dense_w + unknown.expert_weights_s(1))
    # a table's share of a layer, and the seconds a BF16 parameter takes to stream
    share = 128256 * 4096 / 32
    per_param = (unknown.dense_w - known.dense_w) / (2 * share)
    assert (unknown.dense_w - tied.dense_w) == pytest.approx(per_param * share)
    assert per_param == pytest.approx(2 / (cfg.hbm_bw * default_tables().operator(
        "gemm", "H200", "nvidia", "bf16", cfg.tuning, cfg.engine).memory_eff), rel=1e-9)
    # a catalog model whose vocabulary is not established (DeepSeek V4) prices no head
    v4 = StepModel(config("B200", model="deepseek-v4-pro", precision="fp4", tp=8))
    assert v4.cfg.vocab_size == 0 and v4.head_s(64) == 0.0
