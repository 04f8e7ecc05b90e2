"""SGLang's step order: a step that can prefill runs before any decode, and without
--enable-mixed-chunk the decoders sit it out (scheduler: "Run prefill first if possible");
vLLM and TensorRT-LLM put prefill chunks and decodes in one step."""

from __future__ import annotations

from typing import Any

import pytest
from sim_helpers import catalog, config

from infermatrix.sim import SimConfig, SimRequest, simulate


def _decoder_and_newcomer(engine: str, streaks: bool = True, **kw: Any
                          ) -> tuple[list[float], float]:
    """A request decoding alone when a second arrives: the first one's token times and the
    newcomer's first token (``streaks``: in decode phases, else stepping)."""
    cfg = config("H100", tp=2, engine=engine, **kw)
    run = simulate(cfg, [SimRequest(500, 200), SimRequest(3000, 20, arrival=0.3)],
                   streaks=streaks)
    old, new = run.results
    assert old.first_token_at < new.sent_at < old.finished_at  # it arrives mid-decode
    return [float(t) for t in old.token_times], new.first_token_at


@pytest.mark.parametrize("streaks", [True, False])
def test_sglang_decoders_wait_out_the_step_that_prefills(streaks: bool) -> None:
    times, first = _decoder_and_newcomer("sglang", streaks)
    # no token of the decoder at the end of the newcomer's prefill step, and the gap around
    # it holds that whole step
    assert first not in times
    before = max(t for t in times if t < first)
    after = min(t for t in times if t > first)
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    assert after - before > 1.5 * gaps[len(gaps) // 2]
    # vLLM (and SGLang with --enable-mixed-chunk): the decoder's token comes with the chunk
    for engine, kw in (("vllm", {}), ("sglang", {"mixed_chunk": True})):
        times, first = _decoder_and_newcomer(engine, streaks, **kw)
        assert first in times


def test_prefill_alone_follows_the_engine_and_its_flags() -> None:
    cat = catalog()

    def cfg(engine: str, **kw: Any) -> SimConfig:
        return SimConfig.from_parts(cat, "H200", "deepseek-r1-0528", "fp8", tp=8, engine=engine,
                                    **kw)

    assert cfg("sglang").prefill_alone and cfg("sglang").summary()["prefill_alone"]
    assert not cfg("vllm").prefill_alone and not cfg("trtllm").prefill_alone
    assert not cfg("sglang", mixed_chunk=True).prefill_alone
    # attention DP: the other ranks decode in the synchronised step (the mixed step stands
    # in), unless speculative decoding idles the whole DP group
    assert not cfg("sglang", dp=8, attention_dp=True).prefill_alone
    assert cfg("sglang", dp=8, attention_dp=True, spec_draft_tokens=1).prefill_alone


def test_recipes_set_it_and_a_pd_decode_pool_never_prefills() -> None:
    cat = catalog()
    sglang = [r for r, rec in cat.recipes.items() if rec.engine.name == "sglang"]
    aggregated = next(r for r in sglang if cat.recipes[r].topology.mode == "aggregated"
                      and not cat.recipes[r].topology.pools[0].parallel.attention_dp)
    assert SimConfig.from_recipe(cat, aggregated).prefill_alone
    pd = next(r for r in sglang if cat.recipes[r].topology.mode != "aggregated")
    assert not SimConfig.from_recipe(cat, pd).prefill_alone


def test_open_loop_arrivals_in_sglang_phases_equal_stepping() -> None:
    """Arrivals cut decode phases into prefill-only steps: token for token as stepping."""
    cfg = config("H100", tp=1, instances=2, max_num_seqs=16, engine="sglang")
    assert cfg.prefill_alone
    reqs = [SimRequest(200 + 31 * (i % 7), 150 + 17 * (i % 5), arrival=0.05 * i) for i in range(60)]
    fast, slow = simulate(cfg, reqs), simulate(cfg, reqs, streaks=False)
    assert fast.steps == slow.steps
    assert fast.preemptions == slow.preemptions
    for a, b in zip(fast.results, slow.results, strict=True):
        assert a.completion_tokens == b.completion_tokens
        assert list(a.token_times) == pytest.approx(list(b.token_times), abs=1e-9)


def test_sglang_before_piecewise_graphs_launches_a_prefill_step_layer_by_layer() -> None:
    """SGLang's steps that prefill replay piecewise CUDA graphs by default from v0.5.10 (release
    notes; PR #16331); an older build launches each layer from the host, at least the
    eager_dispatch floor a layer. A build of unknown version is taken to replay them."""
    from infermatrix.sim.perf import PerfModel
    from infermatrix.sim.tables import default_tables

    def gpt_oss(version: str = "unstated") -> SimConfig:
        return config("B200", model="gpt-oss-120b", precision="mxfp4", tp=8, engine="sglang",
                      engine_version=version)

    def prefill_ms(version: str) -> float:
        return PerfModel(gpt_oss(version)).prefill_time(100) * 1000

    floor_ms = gpt_oss().layers * default_tables().operator(
        "eager_dispatch", "B200", "nvidia").floor_us / 1000
    old, new, unknown = prefill_ms("0.5.6"), prefill_ms("0.5.10"), prefill_ms("unstated")
    # the old build is held to the floor; the graphed step takes its GPU time, well under it
    assert old == pytest.approx(floor_ms) and floor_ms > 1.5 * new
    assert unknown == new
    # vLLM (piecewise graphs since V1) carries no such floor
    assert default_tables().engines["vllm"].prefill_graphs is None
