"""Attention DP scheduled per rank: each rank's scheduler takes its own token budget a step
(SGLang divides --chunked-prefill-size among the DP ranks, server_args
_handle_data_parallelism; TensorRT-LLM's max_num_tokens and vLLM's budget count per rank), and
a step that prefills is timed by its busiest rank's own tokens on the attention side."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from sim_helpers import catalog

from infermatrix.sim import SimConfig, segment_hashes
from infermatrix.sim.perf import BatchShape, PerfModel
from infermatrix.sim.scheduler import EngineCore
from infermatrix.sim.seq import Seq
from infermatrix.sim.step import Step


def _r1(engine: str = "sglang", version: str = "0.5.6", **kw: Any) -> SimConfig:
    kw.setdefault("dp", 8)
    return SimConfig.from_parts(catalog(), "H200", "deepseek-r1-0528", "fp8", tp=8,
                                attention_dp=True, engine=engine, engine_version=version, **kw)


def test_sglang_divides_the_chunked_prefill_size_among_the_dp_ranks() -> None:
    # H200: SGLang's default chunk 8,192, divided by dp since 0.4.4, by 2 before
    assert _r1().rank_tokens == 8192 // 8 and _r1().rank_prefill_only
    assert _r1(version="").rank_tokens == 1024  # an unstated build: the current rule
    assert _r1(version="0.4.3.post2").rank_tokens == 4096
    assert _r1(dp=4).rank_tokens == 2048
    # the user's --chunked-prefill-size is divided too; the instance's figure stays the user's
    assert _r1(max_num_batched_tokens=65536).rank_tokens == 8192
    assert _r1(max_num_batched_tokens=65536).max_num_batched_tokens == 65536
    # a rank's decoders do not draw on it: every rank's prefill plus one token a sequence
    cfg = _r1()
    assert cfg.step_tokens == 8 * 1024 + cfg.max_num_seqs
    # chunked prefill off (-1) stays off: a rank prefills up to max-prefill-tokens, undivided
    ascend = SimConfig.from_recipe(catalog(), "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d")
    assert ascend.kv_ranks == 8 and ascend.rank_tokens == 68000
    # TensorRT-LLM counts max_num_tokens per rank, decoders included; no DP, no rank budget
    trt = _r1("trtllm", "1.2", max_num_batched_tokens=768)
    assert trt.rank_tokens == 768 and not trt.rank_prefill_only and trt.step_tokens == 8 * 768
    assert _r1(dp=1).rank_tokens == 0


def _steps_to_first_token(core: EngineCore, seqs: list[Seq]) -> list[Step]:
    for seq in seqs:
        core.add(seq)
    steps: list[Step] = []
    while any(s.num_output == 0 for s in seqs):
        step = core.schedule()
        assert step is not None
        core.finish(step, float(len(steps)))
        steps.append(step)
    return steps


def test_a_prompt_is_prefilled_in_its_ranks_chunks() -> None:
    # SGLang 0.5 on 8 x H200, DP8: 1,024 tokens a rank a step, so a 3,200-token prompt takes
    # four steps on its rank (one step with the instance's 8,192-token budget)
    steps = _steps_to_first_token(EngineCore(_r1()), [Seq(0, 3200, 4)])
    assert [s.shape.tokens for s in steps] == [1024, 1024, 1024, 128]
    assert all(s.shape.busiest == BatchShape(s.shape.tokens, 1, s.shape.kv_read,
                                             s.shape.attn_pairs) for s in steps)
    # 0.4.3.post2 divided by 2: 4,096 a rank, one step
    assert len(_steps_to_first_token(EngineCore(_r1(version="0.4.3.post2")),
                                     [Seq(0, 3200, 4)])) == 1
    # TensorRT-LLM: a 32,768-token prompt under DEP4 with 8,192 tokens a rank takes 4 steps
    # although the instance admits 4 x 8,192 a step
    trt = _r1("trtllm", "1.2", dp=4, max_num_batched_tokens=8192)
    steps = _steps_to_first_token(EngineCore(trt), [Seq(0, 32768, 4)])
    assert [s.shape.tokens for s in steps] == [8192] * 4


def test_ranks_prefill_side_by_side_and_the_busiest_one_is_handed_over() -> None:
    core = EngineCore(_r1())
    seqs = [Seq(i, 3200, 4) for i in range(8)]
    steps = _steps_to_first_token(core, seqs)
    # one prompt a rank, each rank 1,024 tokens a step: 8 x 1,024 in one step
    assert sorted(s.rank for s in seqs) == list(range(8))
    assert steps[0].shape.tokens == 8 * 1024 and steps[0].shape.seqs == 8
    assert steps[0].shape.busiest is not None and steps[0].shape.busiest.tokens == 1024
    assert len(steps) == 4
    # a newcomer joins while the eight decode: its rank's 1,024 tokens and one decoder
    # (the rank with the fewest sequences: all hold one), the other ranks one token each
    late = Seq(8, 3200, 4)
    core.add(late)
    step = core.schedule()
    assert step is not None and step.shape.tokens == 8 + 1024
    busy = step.shape.busiest
    assert busy is not None and (busy.tokens, busy.seqs) == (1025, 2)
    assert busy.kv_read == 1024 + 3201


def test_a_step_is_timed_by_its_busiest_ranks_own_tokens() -> None:
    cfg = _r1(max_num_batched_tokens=65536)  # 8,192 tokens a rank
    perf = PerfModel(cfg)
    chunk, context = 8192, 4000
    pairs = chunk * (chunk + 1) / 2
    # one rank prefills a whole chunk while seven decode a token each
    whole = BatchShape(chunk + 7, 8, chunk + 7 * (context + 1), pairs + 7 * (context + 1))
    rank = BatchShape(chunk, 1, chunk, pairs)
    balanced = perf.step_time(whole)  # (the batch's tokens spread evenly: 1/8 of them)
    busiest = perf.step_time(replace(whole, busiest=rank))
    assert busiest > 1.5 * balanced
    # its attention side is the rank's own prefill: nearly the chunk prefilled alone, whose
    # gathers count the chunk on every rank (the balanced share's), where this step's count
    # the eight ranks' tokens as before
    alone = perf.prefill_time(chunk)
    assert 0.7 * alone < busiest < alone
    # where the busiest rank holds an even share, the step is what the share gave
    even = BatchShape(chunk, 8, chunk, 8 * (chunk // 8) * (chunk // 8 + 1) / 2)
    share = BatchShape(chunk // 8, 1, chunk // 8, even.attn_pairs / 8)
    assert perf.step_time(replace(even, busiest=share)) == pytest.approx(perf.step_time(even))


def test_decode_steps_keep_the_balanced_share() -> None:
    # pure decode steps carry no busiest rank: the fast path times them as before
    core = EngineCore(_r1())
    seqs = [Seq(i, 64, 50) for i in range(16)]
    _steps_to_first_token(core, seqs)
    step = core.schedule()
    assert step is not None and step.pure_decode and step.shape.busiest is None


def test_a_conversation_waits_for_its_rank_rather_than_lose_its_cache() -> None:
    # a later turn goes to the rank caching its prefix even when another turn of the same
    # prefix took that rank's budget this step (TensorRT-LLM's conversation affinity, and
    # the cache it keeps): it waits a step there, not recomputes everything elsewhere
    cfg = _r1()
    core = EngineCore(cfg)
    system = [("system", 8192)]
    first = Seq(0, 8292, 2, hashes=segment_hashes([*system, ("user-0", 100)], cfg.block_size))
    _steps_to_first_token(core, [first])
    while core.running:  # it finishes; its blocks stay cached on its rank
        step = core.schedule()
        assert step is not None
        core.finish(step, 0.0)
    others = [Seq(i, 8192 + 3000, 2,
                  hashes=segment_hashes([*system, (f"user-{i}", 3000)], cfg.block_size))
              for i in (1, 2)]
    steps = _steps_to_first_token(core, others)
    assert {s.rank for s in others} == {first.rank}
    assert all(s.cached_tokens >= 8192 for s in others)
    # the second waited for the first's chunks: 3,000 + 3,000 new tokens at 1,024 a step
    assert len(steps) == 6
    assert all(sum(n for _, n, _ in s.entries if n > 1) <= 1024 for s in steps)
