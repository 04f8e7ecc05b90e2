"""KV cache: prefix reuse, LRU eviction, exhaustion → queueing and preemption (HTTP and virtual)."""

from __future__ import annotations

import asyncio

from sim_helpers import config, get_text, metric, post_json, run, session, stream

from infermatrix.sim import SimRequest, segment_hashes, simulate
from infermatrix.sim.prefix_cache import BlockPool, chain_hashes


def test_block_pool_shares_prefixes_and_evicts_least_recently_used() -> None:
    pool = BlockPool(num_blocks=4, block_size=2)
    a = chain_hashes(list("aabbcc"), 2)
    b = chain_hashes(list("ddee"), 2)
    blocks = pool.allocate(3)
    for blk, h in zip(blocks, a, strict=True):
        pool.commit(blk, h)
    pool.release(blocks)
    assert pool.match(a) == blocks and pool.free_blocks == 4
    assert pool.match(chain_hashes(list("aabbxx"), 2)) == blocks[:2]  # shared prefix only
    # two new blocks: the free one, then the least recently used cached one (a's tail goes first)
    got = pool.allocate(2)
    assert got is not None and blocks[2] in got
    assert pool.match(a) == blocks[:2]
    for blk, h in zip(got, b, strict=True):
        pool.commit(blk, h)
    assert pool.allocate(3) is None  # two free + cached, but 2 are in use
    pool.release(got)
    assert pool.reset() == 4 and pool.match(a) == [] and pool.free_blocks == 4


def test_free_blocks_after_acquiring_a_match_is_known_before_acquiring_it() -> None:
    """The scheduler checks a waiting sequence's room before it references its cached prefix
    (a failed admission must not refresh that prefix in the LRU order): a matched block nobody
    references leaves the evictable set when acquired, one already in use does not."""
    pool = BlockPool(num_blocks=6, block_size=2)
    a = chain_hashes(list("aabbcc"), 2)
    held = pool.allocate(3)
    for blk, h in zip(held, a, strict=True):
        pool.commit(blk, h)
    pool.release(held[2:])  # the third prompt block is cached but unreferenced
    matched = pool.match(a)
    expected = pool.free_after_acquire(matched)
    assert expected == pool.free_blocks - 1
    pool.acquire(matched)
    assert pool.free_blocks == expected


def test_prefix_reuse_lowers_ttft_of_a_later_turn_in_virtual_time() -> None:
    def turns(caching: bool):
        cfg = config("H100", tp=2, prefix_caching=caching)
        bs = cfg.block_size
        first = SimRequest(3000, 200, hashes=segment_hashes([("system", 3000)], bs), session="s")
        second = SimRequest(3300, 100, after=0, delay=1.0, session="s",
                            hashes=segment_hashes([("system", 3000), ("answer", 200), ("user", 100)], bs))
        return simulate(cfg, [first, second]).results

    cold, warm = turns(False), turns(True)
    assert warm[1].cached_tokens == 2992  # 187 full blocks of the shared 3,000 tokens
    assert cold[1].cached_tokens == 0
    assert warm[1].ttft < 0.3 * cold[1].ttft, (warm[1].ttft, cold[1].ttft)
    assert warm[1].sent_at >= warm[0].finished_at + 1.0  # the think time is honoured


def test_a_conversation_joined_under_way_starts_warm() -> None:
    """``warm_tokens``: the head of a prompt computed before the run (a lane joining a
    conversation mid-way, as in a steady state) is not prefilled but is held and reported as
    cached, and the next turn finds it in the prefix cache like any computed prompt."""
    cfg = config("H100", tp=2)
    bs = cfg.block_size
    context = [("system", 3000), ("answer", 200), ("user", 8000)]
    prompt = segment_hashes([*context, ("user-next", 300)], bs)
    follow = segment_hashes([*context, ("user-next", 300), ("answer-2", 100), ("user-3", 50)], bs)

    def turns(warm: int):
        first = SimRequest(11500, 100, hashes=prompt, session="s", warm_tokens=warm)
        second = SimRequest(11650, 50, hashes=follow, after=0, delay=0.5, session="s")
        return simulate(cfg, [first, second]).results

    cold, warm = turns(0), turns(11200)
    assert cold[0].cached_tokens == 0 and warm[0].cached_tokens == 11200
    assert warm[0].ttft < 0.2 * cold[0].ttft, (warm[0].ttft, cold[0].ttft)
    assert warm[1].cached_tokens == cold[1].cached_tokens == 11500 // bs * bs
    assert warm[1].ttft == cold[1].ttft  # from then on the same conversation


def test_prefix_reuse_over_http_reports_cached_tokens_and_lowers_ttft(sim_server) -> None:
    base = sim_server(config("H100", tp=2)).base_url  # real time: TTFTs are ~20 vs ~150 ms
    shared = " ".join(f"s{k}" for k in range(2000))
    fresh = " ".join(f"f{k}" for k in range(2050))

    async def go():
        async with session() as s:
            url = base + "/v1/completions"
            first = await stream(s, url, {"prompt": shared, "max_tokens": 4})
            warm = await stream(s, url, {"prompt": shared + " and then some more words", "max_tokens": 4})
            cold = await stream(s, url, {"prompt": fresh, "max_tokens": 4})
            _, metrics = await get_text(s, base + "/metrics")
            await post_json(s, base + "/reset_prefix_cache")
            after_reset = await stream(s, url, {"prompt": shared, "max_tokens": 4})
            return first, warm, cold, metrics, after_reset

    first, warm, cold, metrics, after_reset = run(go())
    assert first.usage["prompt_tokens_details"]["cached_tokens"] == 0
    assert warm.usage["prompt_tokens_details"]["cached_tokens"] == 2000
    assert warm.usage["prompt_tokens"] == 2005
    assert warm.ttft < 0.5 * cold.ttft, (warm.ttft, cold.ttft)
    assert metric(metrics, "vllm:prefix_cache_hits_total") == 2000
    assert 0 < metric(metrics, "sim:prefix_cache_hit_rate") < 1
    assert after_reset.usage["prompt_tokens_details"]["cached_tokens"] == 0


def test_kv_exhaustion_queues_and_preempts_visible_in_metrics(sim_server) -> None:
    # a 70B model on ONE H100 leaves ~8,100 tokens of KV: 24 × (200 + 300) cannot all fit
    cfg = config("H100", tp=1, max_num_seqs=64)
    assert cfg.kv_capacity_tokens < 0.75 * 24 * (200 + 300)
    base = sim_server(cfg, time_scale=50.0).base_url
    prompt = " ".join(f"w{k}" for k in range(200))
    seen = {"waiting": 0.0, "usage": 0.0}

    async def go():
        async with session() as s:
            tasks = [asyncio.create_task(stream(s, base + "/v1/completions",
                                                {"prompt": f"{i} {prompt}", "max_tokens": 300}))
                     for i in range(24)]
            while not all(t.done() for t in tasks):
                _, text = await get_text(s, base + "/metrics")
                seen["waiting"] = max(seen["waiting"], metric(text, "vllm:num_requests_waiting"))
                seen["usage"] = max(seen["usage"], metric(text, "vllm:kv_cache_usage_perc"))
                await asyncio.sleep(0.01)
            _, final = await get_text(s, base + "/metrics")
            return [t.result() for t in tasks], final

    results, final = run(go())
    assert all(r.usage["completion_tokens"] == 300 == r.words for r in results)
    assert seen["waiting"] > 0 and seen["usage"] > 0.9, seen
    assert metric(final, "vllm:num_preemptions_total") > 0
    assert metric(final, "vllm:kv_cache_usage_perc") == 0  # everything freed at the end

    virtual = simulate(cfg, [SimRequest(201, 300) for _ in range(24)])
    assert virtual.preemptions > 0
    assert all(r.completion_tokens == 300 for r in virtual.results)


def test_a_preempted_sequence_keeps_its_computed_blocks_in_the_prefix_cache() -> None:
    # ~4,300 tokens of KV, 512-token chunks, 8 unhashed 1,800-token prompts at once: the newest
    # sequence is preempted mid-prefill again and again. With prefix caching its computed blocks
    # stay cached (as vLLM's freed blocks do), so coming back it resumes instead of recomputing.
    def offline(caching: bool):
        cfg = config("H100", tp=1, max_num_batched_tokens=512, prefix_caching=caching,
                     memory_fraction=0.885)
        assert cfg.kv_capacity_tokens < 5000
        return simulate(cfg, [SimRequest(1800, 20) for _ in range(8)], record_token_times=False)

    cold, kept = offline(False), offline(True)
    for run_ in (cold, kept):
        assert run_.preemptions > 0
        assert all(r.completion_tokens == 20 and r.error is None for r in run_.results)
    assert kept.preemptions < cold.preemptions
    assert kept.duration < 0.9 * cold.duration, (kept.duration, cold.duration)
