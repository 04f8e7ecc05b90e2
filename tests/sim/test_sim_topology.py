"""Several instances behind a router, and disaggregated prefill/decode pools with KV transfer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sim_helpers import config, get_text, metric, run, session, stream

from infermatrix.catalog.loader import load_catalog
from infermatrix.sim import SimConfig, SimRequest, segment_hashes, simulate

DISAGG = """\
model: llama-3.1-70b-instruct
hardware: H200
engine: {name: sglang, version: "0.5.0", image: lmsysorg/sglang:v0.5.0}
precision: fp8
topology:
  mode: disaggregated
  pools:
    - role: prefill
      instances: 1
      parallel: {tp: 4}
    - role: decode
      instances: 2
      parallel: {tp: 4}
      args: {max-running-requests: 128}
router: {name: sglang-router, policy: cache_aware}
kv_transfer: {backend: nixl}
tags: [test]  # test-only: no sweep plans it (no H200 fleet has the 3 nodes it needs)
source: {document: test, submitted_by: test}
"""


@pytest.fixture
def disagg_config(catalog_copy: Path) -> SimConfig:
    path = catalog_copy / "benchmarks" / "llama-3.1-70b-instruct" / "h200-sglang-disagg.yaml"
    path.write_text(DISAGG)
    cat = load_catalog(catalog_copy)
    return SimConfig.from_recipe(cat, "llama-3.1-70b-instruct/h200-sglang-disagg",
                                 served_model_name="sim-model")


def _sessions(n_sessions: int, turns: int, block_size: int, system: int = 2000,
              turn_in: int = 300, turn_out: int = 100) -> list[SimRequest]:
    """Closed-loop conversations: each turn resends the whole conversation so far."""
    reqs: list[SimRequest] = []
    for s in range(n_sessions):
        segments: list = [(("system", s), system)]
        prev = None
        for t in range(turns):
            segments = [*segments, (("user", s, t), turn_in)]
            prompt = sum(n for _, n in segments)
            reqs.append(SimRequest(prompt, turn_out, hashes=segment_hashes(segments, block_size),
                                   session=f"conv-{s}", after=prev,
                                   # uneven think times, so turns do not come back in lock-step
                                   # (round robin would then keep each session on one instance)
                                   delay=0.5 + 0.3 * ((7 * s + t) % 5) if prev is not None else 0.0,
                                   arrival=0.05 * s))
            prev = len(reqs) - 1
            segments = [*segments, (("answer", s, t), turn_out)]
    return reqs


def test_disaggregated_recipe_builds_both_pools(disagg_config: SimConfig) -> None:
    cfg = disagg_config
    assert cfg.disaggregated and cfg.prefill is not None
    assert (cfg.prefill.instances, cfg.instances, cfg.max_num_seqs) == (1, 2, 128)
    assert cfg.total_gpus == 12
    assert cfg.router_policy == "cache_aware" and cfg.kv_transfer_bw > 0


def test_disaggregation_keeps_prefills_out_of_decode_steps(disagg_config: SimConfig) -> None:
    # long prompts arriving while others decode: aggregated decodes stall behind prefill chunks
    reqs = [SimRequest(8000, 200, arrival=0.1 * i) for i in range(24)]
    agg = simulate(config("H200", tp=4, instances=3, router_policy="least_loaded"), reqs)
    dis = simulate(disagg_config, reqs)
    assert all(r.completion_tokens == 200 for r in dis.results)
    assert dis.median("tpot") < 0.7 * agg.median("tpot"), (dis.median("tpot"), agg.median("tpot"))
    # the KV handoff is part of TTFT: 8,000 tokens of KV over the scale-out links
    transfer = 8000 * disagg_config.prefill.kv_bytes_per_token / disagg_config.kv_transfer_bw
    assert min(r.ttft for r in dis.results) > transfer


def test_disaggregated_server_serves_and_counts_transfers(sim_server, disagg_config: SimConfig) -> None:
    base = sim_server(disagg_config, time_scale=10.0).base_url

    async def go():
        async with session() as s:
            out = await stream(s, base + "/v1/chat/completions",
                               {"messages": [{"role": "user", "content": "x " * 500}], "max_tokens": 20})
            _, text = await get_text(s, base + "/metrics")
            return out, text

    out, text = run(go())
    assert out.words == 20 == out.usage["completion_tokens"] and out.usage["prompt_tokens"] == 500
    assert metric(text, "sim:kv_transfers_total") == 1
    assert 'instance="prefill-0"' in text and 'instance="decode-1"' in text


@pytest.mark.parametrize("policy", ["cache_aware", "session"])
def test_cache_aware_and_affinity_routing_beat_round_robin_on_multi_turn(policy: str) -> None:
    def go(p: str):
        cfg = config("H200", tp=4, instances=4, router_policy=p)
        return simulate(cfg, _sessions(12, 4, cfg.block_size))

    rr, smart = go("round_robin"), go(policy)
    hits = {name: sum(r.cached_tokens for r in run_.results) for name, run_ in (("rr", rr), ("smart", smart))}
    assert hits["smart"] > 2 * hits["rr"], hits
    later = lambda run_: sorted(r.ttft for r in run_.results if r.cached_tokens or r.prompt_tokens > 2300)  # noqa: E731
    assert sum(later(smart)) < 0.7 * sum(later(rr))


def test_session_affinity_over_http(sim_server) -> None:
    def second_turn_cached(policy: str) -> int:
        base = sim_server(config("H200", tp=4, instances=2, router_policy=policy), time_scale=20.0).base_url
        history = " ".join(f"h{k}" for k in range(640))

        async def go():
            async with session() as s:
                headers = {"X-Session-ID": "conversation-7"}
                await stream(s, base + "/v1/completions", {"prompt": history, "max_tokens": 2}, headers)
                out = await stream(s, base + "/v1/completions",
                                   {"prompt": history + " next question", "max_tokens": 2}, headers)
                return out.usage["prompt_tokens_details"]["cached_tokens"]

        return run(go())

    assert second_turn_cached("session") == 640
    assert second_turn_cached("round_robin") == 0  # the second turn lands on the other instance


def test_engine_knobs_come_from_args_and_engine_config_files() -> None:
    from sim_helpers import catalog

    cat = catalog()
    trt = SimConfig.from_recipe(cat, "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8")
    # decode pool config: max_batch_size 192, max_num_tokens 768, block reuse off,
    # free_gpu_memory_fraction 0.8 of what the weights and the profiled activations leave,
    # stream_interval 100, MTP 3
    # (both per attention-DP rank under TensorRT-LLM: the DEP8 instance admits 8x as many)
    assert (trt.max_num_seqs, trt.max_num_batched_tokens, trt.prefix_caching) == (8 * 192, 8 * 768, False)
    assert trt.stream_interval == 100 and trt.spec_draft_tokens == 3 and trt.kv_dtype == "fp8"
    free = trt.memory_bytes - trt.weight_bytes_per_gpu - trt.reserved_bytes
    assert trt.kv_bytes_per_gpu == pytest.approx(0.8 * free)
    assert trt.prefill is not None and trt.prefill.instances == 6 and trt.prefill.prefix_caching
    assert trt.router_policy == "session"  # trtllm 'conversation'
    # SGLang: chunked-prefill-size -1 means whole prompts, bounded by max-prefill-tokens
    ascend = SimConfig.from_recipe(cat, "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d")
    assert ascend.max_num_batched_tokens == 68000 and ascend.max_num_seqs == 32
    assert ascend.prefill.spec_draft_tokens == 1 and ascend.spec_draft_tokens == 3  # pool override
    # vLLM: ${CONC} is bound at run time
    llama = "llama-3.1-70b-instruct/h200-vllm-fp8"
    assert SimConfig.from_recipe(cat, llama, params={"CONC": 48}).max_num_seqs == 48
    assert SimConfig.from_recipe(cat, llama).max_num_seqs == 1024  # unbound: vLLM's default on an H200


def test_conversation_id_in_the_body_routes_like_a_session_header(sim_server) -> None:
    base = sim_server(config("H200", tp=4, instances=3, router_policy="conversation"),
                      time_scale=20.0).base_url
    history = " ".join(f"h{k}" for k in range(320))

    async def go():
        async with session() as s:
            cached = []
            for turn in range(3):
                body = {"prompt": history + " more" * turn, "max_tokens": 2,
                        "disaggregated_params": {"conversation_id": "c-42"}}
                out = await stream(s, base + "/v1/completions", body)
                cached.append(out.usage["prompt_tokens_details"]["cached_tokens"])
            return cached

    assert run(go()) == [0, 320, 320]


def test_waiting_for_the_decode_pool_is_ttft_where_the_client_streams_the_decode_server(
        disagg_config: SimConfig) -> None:
    """SGLang's PD router streams the decode server's answer: a request waiting for room on a
    full decode pool has not had its first token, so the wait is TTFT and its TPOT is the
    decode steps'. TensorRT-LLM's disaggregated server sends the context server's token at
    once: there the same wait falls between the first and second tokens."""
    reqs = [SimRequest(2000, 100) for _ in range(6)]
    small = replace(disagg_config, instances=1, max_num_seqs=2)  # room for 2 decoders

    def spread(cfg: SimConfig) -> tuple[float, float, float]:
        res = simulate(cfg, reqs).results
        assert all(r.completion_tokens == 100 and r.error is None for r in res)
        tpots = sorted(r.tpot for r in res)
        return tpots[0], tpots[-1], max(r.ttft for r in res)

    lo, hi, ttft = spread(small)
    assert hi < 1.5 * lo, (lo, hi)
    assert ttft > 2 * 99 * lo  # the last pair waited for two pairs to decode all their tokens
    lo_t, hi_t, ttft_t = spread(replace(small, engine="trtllm"))
    assert hi_t > 2 * lo_t and ttft_t < 0.5 * ttft, (lo_t, hi_t, ttft_t)
