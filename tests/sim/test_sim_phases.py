"""The decode-phase engine against stepping one batch at a time: a sweep level's results
(every number in the result the client writes) agree within 1%.

Small levels of the nightly sweep, one per engine behaviour the phases must respect: a dense
aggregated server, chunked prefill of long prompts, speculative decoding, disaggregated
prefill/decode pools and attention data parallelism.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from sim_helpers import catalog, config

from infermatrix.launch.virtual import measure_level, result_numbers
from infermatrix.plan.jobs import plan_sweep
from infermatrix.sim import SimConfig, SimRequest, segment_hashes, simulate
from infermatrix.sim.perf import PerfModel

LEVELS = [
    ("llama-3.1-70b-instruct/mi355x-vllm-fp8", "fixed-1k-1k", 8),
    ("llama-3.1-70b-instruct/mi355x-vllm-fp8", "fixed-8k-1k", 4),
    ("deepseek-v4-pro/h200-sglang-w4a16", "fixed-1k-1k", 4),  # EAGLE speculative decoding
    ("deepseek-v4-pro/b300-trtllm-nvfp4-1ctx-1gen", "fixed-1k-1k", 16),  # prefill/decode pools
    ("deepseek-r1-0528/gb200-trtllm-nvfp4-slurm/ctx1tp4-gen1tep8-bs32", "fixed-8k-1k", 4),
]
# one per attention kind and step shape the vectorised decode path must reproduce: GQA (vLLM,
# no overlap), MLA (SGLang, overlap), sparse MLA with EAGLE drafts, sliding-window MoE under
# expert parallelism, attention DP with uneven ranks (TensorRT-LLM)
DECODE_CONFIGS = [
    lambda: config("H200", tp=4),
    lambda: SimConfig.from_recipe(catalog(), "deepseek-r1-0528/h200-sglang-fp8"),
    lambda: SimConfig.from_recipe(catalog(), "deepseek-v4-pro/h200-sglang-w4a16"),
    lambda: config("H100", model="gpt-oss-120b", tp=2, ep=2),
    lambda: SimConfig.from_recipe(catalog(), "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8"),
]


@pytest.mark.parametrize("make", DECODE_CONFIGS)
@pytest.mark.parametrize("seqs", [1, 7, 64])
def test_decode_times_equal_one_call_per_step(make: Any, seqs: int) -> None:
    """A decode phase's step times in one numpy pass equal the scalar model step by step,
    across short and long contexts (sparse top-k and sliding windows switch on inside)."""
    cfg = make()
    perf = PerfModel(cfg)
    draft = cfg.spec_draft_tokens
    contexts = (seqs * 50 + np.arange(0, 3000, 7) * seqs * (1.7 if draft else 1.0)).astype(np.int64)
    fast = perf.decode_times(seqs, contexts, draft)
    slow = [perf.decode_time(seqs, int(c), draft) for c in contexts]
    assert fast.tolist() == pytest.approx(slow, rel=1e-12, abs=0)
    assert fast[-1] >= fast[0] > 0  # the context grows, and so does the step (or its floor)


def _job(recipe: str, workload: str) -> Any:
    jobs = [j for j in plan_sweep(catalog(), "nightly")
            if j.recipe == recipe and j.workload == workload]
    assert jobs, f"{recipe} × {workload} is no longer in the nightly sweep"
    return jobs[0]


@pytest.mark.slow
@pytest.mark.parametrize(("recipe", "workload", "conc"), LEVELS)
def test_a_level_measured_in_decode_phases_equals_stepping(recipe: str, workload: str,
                                                           conc: int) -> None:
    job = _job(recipe, workload)
    fast = result_numbers(measure_level(catalog(), job, conc))
    slow = result_numbers(measure_level(catalog(), job, conc, stepwise=True))
    assert fast.keys() == slow.keys()
    assert fast["completed"] == slow["completed"] > 0
    off = {k: (fast[k], slow[k]) for k in fast
           if not math.isclose(fast[k], slow[k], rel_tol=0.01, abs_tol=1e-6)}
    assert not off, off


def test_open_loop_arrivals_cut_phases_where_stepping_admits_them() -> None:
    """Arrivals in the middle of decode phases, several instances and preemptions (a small KV
    cache): token for token the same times as stepping."""
    cfg = config("H100", tp=1, instances=2, max_num_seqs=16, memory_fraction=0.885)  # ~4,300 tokens of KV each
    reqs = [SimRequest(200 + 31 * (i % 7), 150 + 17 * (i % 5), arrival=0.05 * i) for i in range(60)]
    fast, slow = simulate(cfg, reqs), simulate(cfg, reqs, streaks=False)
    assert fast.steps == slow.steps
    assert fast.preemptions == slow.preemptions > 0
    for a, b in zip(fast.results, slow.results, strict=True):
        assert a.completion_tokens == b.completion_tokens
        assert list(a.token_times) == pytest.approx(list(b.token_times), abs=1e-9)


def _chains(lanes: int, turns: int, block_size: int) -> list[SimRequest]:
    """Agentic lanes as a capacity search plays them: each turn resends the conversation
    (a shared system prompt, earlier turns and answers: prefix-cache hits), after the previous
    turn and a tool delay."""
    reqs: list[SimRequest] = []
    for lane in range(lanes):
        segments: list = [("system", 1500)]
        prev = None
        for t in range(turns):
            segments = [*segments, (("user", lane, t), 200 + 37 * ((lane + t) % 5))]
            out = 40 + 23 * ((lane * 3 + t) % 7)
            reqs.append(SimRequest(sum(n for _, n in segments), out, session=f"lane-{lane}",
                                   hashes=segment_hashes(segments, block_size), after=prev,
                                   delay=0.0 if prev is None else 0.2 + 0.05 * (t % 3)))
            prev = len(reqs) - 1
            segments = [*segments, (("answer", lane, t), out)]
    return reqs


def test_agentic_chains_in_decode_phases_equal_stepping() -> None:
    cfg = config("H200", tp=4, instances=2, router_policy="cache_aware", max_num_seqs=32)
    reqs = _chains(12, 6, cfg.block_size)
    fast = simulate(cfg, reqs, record_token_times=False)
    slow = simulate(cfg, reqs, record_token_times=False, streaks=False)
    assert fast.steps == slow.steps
    assert sum(r.cached_tokens for r in fast.results) > 0
    for a, b in zip(fast.results, slow.results, strict=True):
        assert (a.instance, a.cached_tokens, a.completion_tokens) == (
            b.instance, b.cached_tokens, b.completion_tokens)
        assert (a.sent_at, a.first_token_at, a.finished_at) == pytest.approx(
            (b.sent_at, b.first_token_at, b.finished_at), abs=1e-9)


def test_a_step_completing_prefills_starts_a_phase_equal_to_stepping(monkeypatch: Any) -> None:
    """Closed loop: each completion admits a newcomer whose whole prompt is one chunk; the
    step that prefills it (the others decoding) starts the next phase. Token for token the
    same times as stepping, with some of those phases taken."""
    from infermatrix.sim.scheduler import EngineCore

    taken = []
    original = EngineCore._prefills_complete

    def spy(self: EngineCore, step: Any) -> bool:
        ok = original(self, step)
        taken.append(ok and not step.pure_decode)
        return ok

    monkeypatch.setattr(EngineCore, "_prefills_complete", spy)
    cfg = config("H100", tp=2)
    reqs = [SimRequest(300 + 41 * (i % 5), 60 + 13 * (i % 7)) for i in range(40)]
    fast = simulate(cfg, reqs, concurrency=8)
    assert any(taken)
    slow = simulate(cfg, reqs, concurrency=8, streaks=False)
    assert fast.steps == slow.steps
    for a, b in zip(fast.results, slow.results, strict=True):
        assert a.completion_tokens == b.completion_tokens
        assert list(a.token_times) == pytest.approx(list(b.token_times), abs=1e-9)
    # without token times (as capacity searches and validation run): the same first tokens
    bare = simulate(cfg, reqs, concurrency=8, record_token_times=False)
    for a, b in zip(bare.results, slow.results, strict=True):
        assert (a.first_token_at, a.finished_at) == pytest.approx(
            (b.first_token_at, b.finished_at), abs=1e-9)


def test_a_queue_held_back_by_a_full_kv_pool_does_not_cut_phases(monkeypatch: Any) -> None:
    """More requests than the KV pool holds: the head of the queue waits for blocks, which
    only a leaving sequence frees. The decode phases go on over the waiting queue (a rank that
    cannot take the head now cannot during a phase), token for token as stepping."""
    from infermatrix.sim.scheduler import EngineCore

    held = []
    original = EngineCore.could_admit

    def spy(self: EngineCore) -> bool:
        ok = original(self)
        held.append(bool(self.waiting) and not ok)
        return ok

    monkeypatch.setattr(EngineCore, "could_admit", spy)
    cfg = config("H100", tp=1, max_num_seqs=64)  # ~4,300 tokens of KV
    reqs = [SimRequest(400 + 53 * (i % 6), 300 + 29 * (i % 5)) for i in range(48)]
    fast = simulate(cfg, reqs, concurrency=24)
    assert any(held)
    slow = simulate(cfg, reqs, concurrency=24, streaks=False)
    assert fast.steps == slow.steps
    assert fast.preemptions == slow.preemptions
    for a, b in zip(fast.results, slow.results, strict=True):
        assert a.completion_tokens == b.completion_tokens
        assert list(a.token_times) == pytest.approx(list(b.token_times), abs=1e-9)
