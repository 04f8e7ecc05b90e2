"""KV capacity from the recipe: weights per GPU by part, and one KV pool per attention-DP rank."""

from __future__ import annotations

import pytest
from sim_helpers import catalog

from infermatrix.sim import SimConfig, SimRequest, segment_hashes, simulate
from infermatrix.sim.clock import VirtualKernel
from infermatrix.sim.engine import Deployment, EngineRequest


def test_attention_dp_replicates_everything_but_the_routed_experts_per_rank() -> None:
    cat = catalog()
    ascend = SimConfig.from_recipe(cat, "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d")
    # decode pool: TP32 with attention DP8, EP32: experts over 32 dies, the rest over the
    # attention TP group of 4 (int8, one byte a parameter) but MLA's down-projections, which
    # every die holds whole, and its MTP draft layer: one more layer of the same make
    experts, whole = ascend.expert_params, ascend.whole_params
    assert ascend.expert_shards == 32 and ascend.dense_shards == 4
    assert ascend.spec_draft_tokens > 0
    assert ascend.weight_bytes_per_gpu == pytest.approx(
        (experts / 32 + (671e9 - experts - whole) / 4 + whole) * (1 + 1 / ascend.layers))
    assert ascend.kv_ranks == 8
    # the prefill pool (plain TP32, with the same draft) splits everything else 32 ways and has
    # one KV pool
    assert ascend.prefill.weight_bytes_per_gpu == pytest.approx(
        ((671e9 - whole) / 32 + whole) * (1 + 1 / 61))
    assert ascend.prefill.kv_ranks == 1
    assert ascend.weight_bytes_per_gpu > 1.15 * ascend.prefill.weight_bytes_per_gpu
    # a dense model without attention DP: all of it over tp
    llama = SimConfig.from_parts(cat, "H200", "llama-3.1-70b-instruct", "fp8", tp=4)
    assert llama.weight_bytes_per_gpu == pytest.approx(70.6e9 / 4)


def _dep8(memory_fraction: float) -> SimConfig:
    return SimConfig.from_parts(catalog(), "H200", "deepseek-r1-0528", "fp8", tp=8, dp=8, ep=8,
                                attention_dp=True, engine="trtllm", memory_fraction=memory_fraction,
                                max_num_batched_tokens=262144, prefix_caching=False)


def test_each_rank_holds_only_its_own_sequences_kv() -> None:
    # KV room so that each of the 8 ranks holds 1.5 long sequences: the whole instance could
    # hold 12, but a sequence never spans ranks, so only 8 run at once
    probe = _dep8(0.9)
    per_token = probe.kv_bytes_per_token / probe.kv_shards * probe.kv_ranks  # bytes on one GPU
    weights = probe.weight_bytes_per_gpu + probe.reserved_bytes  # and the engine's reserve
    prompt, out = 20_000, 64
    fraction = (weights + 1.5 * (prompt + out) * per_token) / probe.memory_bytes
    cfg = _dep8(fraction)
    assert 1.4 * (prompt + out) < cfg.rank_capacity_tokens < 1.6 * (prompt + out)
    assert cfg.kv_capacity_tokens > 11.5 * (prompt + out)
    reqs = [SimRequest(prompt_tokens=prompt, max_tokens=out) for _ in range(12)]
    res = sorted(simulate(cfg, reqs, concurrency=12).results, key=lambda r: r.first_token_at)
    assert all(r.error is None for r in res)
    first, late = res[:8], res[8:]
    # the last four start only when sequences of the first four have finished and freed a rank
    assert min(r.first_token_at for r in late) >= min(r.finished_at for r in first)
    assert max(r.first_token_at for r in first) < min(r.finished_at for r in first)


def test_a_request_longer_than_one_ranks_kv_is_rejected() -> None:
    probe = _dep8(0.9)
    per_token = probe.kv_bytes_per_token / probe.kv_shards * probe.kv_ranks
    fraction = (probe.weight_bytes_per_gpu + probe.reserved_bytes + 30_000 * per_token) / probe.memory_bytes
    cfg = _dep8(fraction)
    assert cfg.kv_capacity_tokens > 200_000 > 40_000 > cfg.rank_capacity_tokens
    dep = Deployment(cfg, VirtualKernel())
    reason = dep.reject_reason(EngineRequest(prompt_tokens=40_000, max_tokens=10))
    assert reason is not None and "attention-DP rank" in reason
    assert dep.reject_reason(EngineRequest(prompt_tokens=20_000, max_tokens=10)) is None


def test_a_later_turn_goes_to_the_rank_that_caches_its_prefix() -> None:
    cfg = SimConfig.from_parts(catalog(), "H200", "deepseek-r1-0528", "fp8", tp=8, dp=8, ep=8,
                               attention_dp=True, engine="trtllm")
    turn1 = segment_hashes([("system", 4096), ("user-1", 100)], cfg.block_size)
    turn2 = segment_hashes([("system", 4096), ("user-1", 100), ("user-2", 100)], cfg.block_size)
    other = segment_hashes([("other", 2000)], cfg.block_size)
    reqs = [
        SimRequest(prompt_tokens=4196, max_tokens=4, hashes=turn1),
        # starts when turn 1 is done, on the then least-loaded rank: turn 1's
        SimRequest(prompt_tokens=2000, max_tokens=2000, hashes=other, after=0),
        # arrives while that one runs there: every other rank is emptier, but this one caches it
        SimRequest(prompt_tokens=4296, max_tokens=4, hashes=turn2, after=0, delay=0.5),
    ]
    res = simulate(cfg, reqs).results
    assert res[2].cached_tokens >= 4096


def test_sglang_sizes_deepseek_v4_kv_by_its_own_pools() -> None:
    """SGLang carves DeepSeek V4's KV capacity into a window pool, compressed entries, indexer
    keys and compressor states: ~38.9 KB a token for V4 Pro with an EAGLE draft (~23.7 KB
    without), five times the 7.8 KB latent the attention reads and other engines hold."""
    cat = catalog()
    h200 = SimConfig.from_recipe(cat, "deepseek-v4-pro/h200-sglang-w4a16")
    assert h200.kv_pool_bytes_per_token == pytest.approx(38937, rel=1e-3)
    assert h200.kv_bytes_per_token == 7808  # what attention reads per token is unchanged
    assert h200.kv_capacity_tokens == int(h200.kv_bytes_per_gpu / h200.kv_pool_bytes_per_token)
    assert h200.block_size == 256  # SGLang's DeepSeek V4 page, where the recipe sets none
    plain = SimConfig.from_parts(cat, "H200", "deepseek-v4-pro", "w4a16", tp=8, engine="sglang",
                                 memory_fraction=0.88)
    assert plain.kv_pool_bytes_per_token == pytest.approx(23691, rel=1e-3)
    vllm = SimConfig.from_parts(cat, "H200", "deepseek-v4-pro", "w4a16", tp=8, engine="vllm",
                                memory_fraction=0.88)
    assert vllm.kv_pool_bytes_per_token == 0
    # the same bytes hold three times the tokens as the latent alone (vLLM keeps its reserve)
    assert (vllm.kv_capacity_tokens / vllm.kv_bytes_per_gpu
            > 3 * plain.kv_capacity_tokens / plain.kv_bytes_per_gpu)


def _most_running(run) -> int:  # type: ignore[no-untyped-def]
    """The most sequences holding KV at once (admission to finish)."""
    events = sorted([(r.sent_at if r.first_token_at is None else r.first_token_at, 1)
                     for r in run.results] + [(r.finished_at, -1) for r in run.results])
    most = now = 0
    for _, d in events:
        now += d
        most = max(most, now)
    return most


def test_trtllm_reserves_the_whole_request_s_kv_before_admitting_it() -> None:
    # TensorRT-LLM's default capacity scheduler (GUARANTEED_NO_EVICT) admits a request only
    # with the KV of its prompt + output reserved; vLLM admits on what the prompt needs now and
    # preempts when the outputs outgrow the cache
    cat = catalog()

    def cfg(engine: str) -> SimConfig:
        return SimConfig.from_parts(cat, "H100", "llama-3.1-8b-instruct", "fp8", engine=engine,
                                    memory_fraction=0.2, max_num_seqs=1024)

    trt, vllm = cfg("trtllm"), cfg("vllm")
    assert trt.reserve_to_completion and not vllm.reserve_to_completion
    assert trt.summary()["reserve_to_completion"]  # shown by `sim info`
    whole = (1024 + 4096) // trt.block_size  # blocks of one request's prompt + output
    fits = trt.num_blocks // whole
    reqs = [SimRequest(1024, 4096) for _ in range(3 * fits)]
    held, free = simulate(trt, reqs), simulate(vllm, reqs)
    assert held.preemptions == 0
    assert _most_running(held) <= fits
    # vLLM-style admission runs more at once and preempts as they grow
    assert _most_running(free) > 1.3 * fits and free.preemptions > 0
    # a recipe may switch TensorRT-LLM to MAX_UTILIZATION
    assert not SimConfig.from_parts(cat, "H100", "llama-3.1-8b-instruct", "fp8", engine="trtllm",
                                    reserve_to_completion=False).reserve_to_completion
