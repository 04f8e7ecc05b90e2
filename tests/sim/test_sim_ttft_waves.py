"""TTFT under a closed loop (bench_serving's --max-concurrency, every request ready at t=0):
fixed-length requests run in waves, and a request's TTFT is its wave's prefill queue, as the
engine orders the prefills. vLLM's V0 engine serving an MLA model prefills whole prompts in
steps of their own (no chunked prefill; engine_defaults.unchunked_prefill)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from sim_helpers import catalog

from infermatrix.sim import SimConfig, SimRequest, simulate


def r1(engine_version: str = "0.7.3", **kw: Any) -> SimConfig:
    return SimConfig.from_parts(catalog(), "H200", "deepseek-r1-0528", "fp8", tp=8,
                                engine="vllm", engine_version=engine_version, **kw)


def test_vllm_v0_with_an_mla_model_does_not_chunk_prompts() -> None:
    v0 = r1("0.7.3")
    assert v0.whole_prompts and v0.prefill_alone and v0.summary()["whole_prompts"]
    # V0's defaults without chunked prefill: a budget of the whole context, 256 sequences
    assert v0.max_num_batched_tokens == max(v0.max_model_len, 2048)
    assert v0.max_num_seqs == 256
    assert r1("0.7.3", max_model_len=32768).max_num_batched_tokens == 32768
    assert r1("0.7.3", max_num_batched_tokens=20000).max_num_batched_tokens == 20000
    # V1 (0.8 on), an unstated build, --enable-chunked-prefill, a model without MLA: chunked
    for cfg in (r1("0.8.0"), r1("0.11.0"), r1("unstated"), r1("0.7.3", chunked_prefill=True),
                SimConfig.from_parts(catalog(), "H200", "llama-3.1-70b-instruct", "fp8", tp=8,
                                     engine="vllm", engine_version="0.7.3")):
        assert not cfg.whole_prompts and not cfg.prefill_alone
    assert r1("0.11.0", chunked_prefill=False).whole_prompts  # --no-enable-chunked-prefill


def _ttfts(cfg: SimConfig, concurrency: int, waves: int = 4, isl: int = 3200,
           osl: int = 64) -> list[float]:
    run = simulate(cfg, [SimRequest(isl, osl) for _ in range(concurrency * waves)],
                   concurrency=concurrency, record_token_times=False)
    return [r.ttft for r in run.results]


def test_a_wave_is_prefilled_in_one_step_and_its_ttft_grows_with_the_wave() -> None:
    cfg = r1("0.7.3")
    small, large = _ttfts(cfg, 4), _ttfts(cfg, 16)
    # the whole wave's prompts fit one step: every request of a wave has the same TTFT, and
    # the waves stay synchronised (later waves wait as long as the first)
    assert max(small) == pytest.approx(min(small), rel=0.05)
    assert max(large) == pytest.approx(min(large), rel=0.05)
    # 4x the prompts in the wave's prefill step: several times the TTFT
    assert statistics.median(large) > 2.5 * statistics.median(small)


def test_a_wave_larger_than_the_budget_prefills_in_steps_of_whole_prompts() -> None:
    """--max-model-len 32768: ten 3,200-token prompts a step, so a wave of 32 takes four
    prefill steps and its requests' first tokens come at four times."""
    cfg = r1("0.7.3", max_model_len=32768)
    ttfts = _ttfts(cfg, 32, waves=2)
    first_wave = sorted(ttfts[:32])
    distinct = sorted({round(t, 6) for t in first_wave})
    assert len(distinct) == 4
    assert [sum(1 for t in first_wave if round(t, 6) == d) for d in distinct] == [10, 10, 10, 2]


def test_chunked_prefill_beside_decodes_spreads_the_waves_out() -> None:
    """V1 (chunked prefill, prefill chunks and decodes in one step): once the first wave's
    prompts are in, requests finish a step or two apart and each newcomer is prefilled at
    once, so the median TTFT is far below the whole wave's prefill."""
    v0, v1 = _ttfts(r1("0.7.3"), 16), _ttfts(r1("0.8.0"), 16)
    assert statistics.median(v1) < 0.5 * statistics.median(v0)
