"""The decode batch (sim/decode_batch.py) against one sequence at a time: agentic chains of
quiet requests, where a large batch of decoders is stepped as arrays, give exactly the same
runs — every request's instance, cached tokens, tokens, and times to the last bit — with
speculative decoding, prefill/decode pools, attention-DP ranks, and a KV cache small enough to
preempt (where the batch is left to the one-at-a-time path)."""

from __future__ import annotations

from typing import Any

import pytest
from sim_helpers import catalog, config

import infermatrix.sim.decode_batch_steps as batch_steps
from infermatrix.sim import SimConfig, SimRequest, segment_hashes, simulate


def _chains(lanes: int, turns: int, block_size: int) -> list[SimRequest]:
    """Closed-loop lanes as a capacity search plays them: each turn resends the conversation
    (a shared system prompt, earlier turns and answers), after the previous turn and a delay."""
    reqs: list[SimRequest] = []
    for lane in range(lanes):
        segments: list = [("system", 1200)]
        prev = None
        for t in range(turns):
            segments = [*segments, (("user", lane, t), 150 + 37 * ((lane + t) % 5))]
            out = 30 + 41 * ((lane * 3 + t) % 7)
            reqs.append(SimRequest(sum(n for _, n in segments), out, session=f"lane-{lane}",
                                   hashes=segment_hashes(segments, block_size), after=prev,
                                   delay=0.0 if prev is None else 0.1 + 0.07 * (t % 3),
                                   arrival=0.002 * lane if prev is None else 0.0))
            prev = len(reqs) - 1
            segments = [*segments, (("answer", lane, t), out)]
    return reqs


CASES = [
    # prefill/decode pools, attention DP over 8 ranks, MTP drafts (the AA GB300 deployment)
    ("gb300-dep8", lambda: SimConfig.from_recipe(
        catalog(), "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8"), 300, 3, None),
    # aggregated, EAGLE drafts: prefills join and leave the batch of decoders
    ("h200-eagle", lambda: SimConfig.from_recipe(catalog(), "deepseek-v4-pro/h200-sglang-w4a16"),
     48, 4, 4),
    # a KV cache of ~4,300 tokens: steps that would preempt go back to one at a time
    ("small-kv", lambda: config("H100", tp=1, max_num_seqs=64), 40, 3, 4),
]


def _run(cfg: SimConfig, reqs: list[SimRequest], monkeypatch: Any, min_seqs: int) -> tuple[Any, int]:
    built = 0
    real = batch_steps.DecodeBatch

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, seqs: Any) -> None:
            nonlocal built
            built += 1
            super().__init__(seqs)

    with monkeypatch.context() as m:
        m.setattr(batch_steps, "MIN_SEQS", min_seqs)
        m.setattr(batch_steps, "DecodeBatch", Counted)
        run = simulate(cfg, reqs, record_token_times=False)
    return run, built


@pytest.mark.parametrize(("name", "make", "lanes", "turns", "min_seqs"), CASES,
                         ids=[c[0] for c in CASES])
def test_decode_batch_equals_one_sequence_at_a_time(name: str, make: Any, lanes: int, turns: int,
                                                    min_seqs: int | None, monkeypatch: Any) -> None:
    cfg = make()
    reqs = _chains(lanes, turns, cfg.block_size)
    batched, built = _run(cfg, reqs, monkeypatch, min_seqs or batch_steps.MIN_SEQS)
    plain, none = _run(cfg, reqs, monkeypatch, 10**9)
    assert built > 0 and none == 0  # the batch was used, and only where it was allowed
    assert batched.steps == plain.steps and batched.preemptions == plain.preemptions
    if name == "small-kv":
        assert plain.preemptions > 0
    assert sum(r.cached_tokens for r in plain.results) > 0
    for a, b in zip(batched.results, plain.results, strict=True):
        assert (a.error, a.instance, a.cached_tokens, a.completion_tokens, a.preemptions) == (
            b.error, b.instance, b.cached_tokens, b.completion_tokens, b.preemptions)
        assert (a.sent_at, a.first_token_at, a.finished_at) == (
            b.sent_at, b.first_token_at, b.finished_at)


def test_streamed_requests_never_use_the_batch(monkeypatch: Any) -> None:
    """With token times recorded (a level of a throughput sweep) every token is reported as
    it comes, so the batch, which reports only first tokens and ends, stays out."""
    cfg = config("H200", tp=4, max_num_seqs=256)
    reqs = [SimRequest(300, 60 + i % 40, arrival=0.001 * i) for i in range(200)]
    with monkeypatch.context() as m:
        m.setattr(batch_steps, "MIN_SEQS", 2)
        built = []
        m.setattr(batch_steps, "DecodeBatch", lambda seqs: built.append(1))
        run = simulate(cfg, reqs, record_token_times=True)
    assert not built and all(len(r.token_times) == r.completion_tokens for r in run.results)
