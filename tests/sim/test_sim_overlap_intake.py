"""An overlap scheduler (SGLang's event_loop_overlap, TensorRT-LLM's _executor_loop_overlap)
polls for new requests after step n's results, with step n + 1 already launched: a request
arriving while the engine is busy joins the step after the next one (engine.lagged_intake),
one step later than a loop that schedules after each step's output. An idle engine takes a
request in at once."""

from __future__ import annotations

from typing import Any

import pytest
from sim_helpers import assert_phases_match_steps, catalog, config

from infermatrix.sim import SimConfig, SimRequest, simulate
from infermatrix.sim.engine import lagged_intake
from infermatrix.sim.engine_args import engine_knobs


def _cfg(engine: str, **kw: Any) -> SimConfig:
    return config("H200", tp=8, model="deepseek-r1", precision="fp8", engine=engine,
                  max_num_seqs=64, **kw)


def _requests(n: int) -> list[SimRequest]:
    # one long request decoding throughout; the others arrive one by one during its decode
    return [SimRequest(1000, 600, arrival=0.0)] + [
        SimRequest(900 + 13 * i, 40, arrival=0.3 + 0.137 * i) for i in range(n)]


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_a_request_arriving_during_a_busy_step_waits_one_more_step(engine: str) -> None:
    lagged, direct = _cfg(engine), _cfg(engine, overlap_intake=False)
    assert lagged_intake(lagged, True) and not lagged_intake(direct, True)
    assert lagged.summary()["overlap_intake"] and not direct.summary()["overlap_intake"]
    reqs = _requests(10)
    a, b = simulate(direct, reqs), simulate(lagged, reqs)
    step = a.results[0].tpot  # a decode step of the long request
    assert step and step > 0
    extra = [y.ttft - x.ttft for x, y in zip(a.results[1:], b.results[1:], strict=True)]
    # the step launched before the poll: one decode step (the newcomers arrive alone, so the
    # step is the long request's decode), generous tolerance for the batch growing by one. The
    # two runs' step grids drift apart, so one newcomer may arrive just before a step ends in
    # one run and just after one starts in the other: its extra wait then nears two steps
    assert all(0 < e < 2.5 * step for e in extra), (extra, step)
    assert 0.5 * step < sorted(extra)[len(extra) // 2] < 1.5 * step, (extra, step)


@pytest.mark.parametrize("engine", ["sglang", "trtllm", "vllm"])
def test_an_idle_engine_takes_a_request_in_at_once(engine: str) -> None:
    alone = [SimRequest(1000, 50, arrival=0.0)]
    assert simulate(_cfg(engine), alone).results[0].ttft == pytest.approx(
        simulate(_cfg(engine, overlap_intake=False), alone).results[0].ttft)


def test_vllm_is_not_lagged() -> None:
    reqs = _requests(6)
    a, b = simulate(_cfg("vllm"), reqs), simulate(_cfg("vllm", overlap_intake=False), reqs)
    assert [r.ttft for r in a.results] == pytest.approx([r.ttft for r in b.results])


@pytest.mark.parametrize("engine,recv", [("sglang", 1), ("sglang", 10), ("trtllm", 1)])
def test_decode_phases_take_lagged_requests_in_where_stepping_does(engine: str, recv: int) -> None:
    assert_phases_match_steps(_cfg(engine, recv_interval=recv), _requests(16))


def test_the_poll_of_a_recv_interval_is_lagged_too() -> None:
    # SGLang's --scheduler-recv-interval decides which polls take requests in; the requests a
    # poll takes in still join the step after the one launched before it (one newcomer at a
    # time: several would move the polls of the later ones)
    for t in (0.31, 0.45, 0.52, 0.77):
        reqs = [SimRequest(1000, 600), SimRequest(950, 40, arrival=t)]
        a = simulate(_cfg("sglang", recv_interval=10, overlap_intake=False), reqs)
        b = simulate(_cfg("sglang", recv_interval=10), reqs)
        step = a.results[0].tpot
        assert step
        extra = b.results[1].ttft - a.results[1].ttft
        assert 0.5 * step < extra < 2.0 * step, (t, extra, step)


def test_a_closed_loop_ttft_grows_by_about_a_decode_step() -> None:
    # bench_serving --max-concurrency 8 with lengths spread as --random-range-ratio 0.8 does:
    # the requests finish apart, each newcomer arrives while the others decode
    reqs = [SimRequest(900 + 7 * (i % 13), 700 + 17 * (i % 11)) for i in range(64)]
    a = simulate(_cfg("sglang", overlap_intake=False), reqs, concurrency=8)
    b = simulate(_cfg("sglang"), reqs, concurrency=8)
    step = b.median("tpot")
    grew = b.median("ttft") - a.median("ttft")
    assert 0.3 * step < grew < 3.0 * step, (grew, step)


def test_the_launch_args_turn_it_off() -> None:
    recipe = catalog().recipes["deepseek-r1-0528/b200-sglang-fp8"]
    pool = recipe.topology.pools[0]
    assert "overlap_intake" not in engine_knobs(recipe, pool, recipe.params)
    off = pool.model_copy(update={"args": {**pool.args, "disable-overlap-schedule": True}})
    assert engine_knobs(recipe, off, recipe.params)["overlap_intake"] is False
    trt = pool.model_copy(update={"args": {}, "config": {"disable_overlap_scheduler": True}})
    assert engine_knobs(recipe, trt, recipe.params)["overlap_intake"] is False


@pytest.mark.parametrize("engine,steps", [("vllm", 1), ("trtllm", 2), ("sglang", 2)])
def test_a_closed_loops_next_request_misses_the_step_the_engine_starts_at_once(
        engine: str, steps: int) -> None:
    # bench_serving's closed loop sends the next request when one finishes; the engine has
    # started its next step by then (the output still has to reach the client, the request
    # the scheduler), so the newcomer waits for that step, and under an overlap scheduler for
    # the one launched after it too
    cfg = _cfg(engine)
    reqs = [SimRequest(1000, 400), SimRequest(1000, 20), SimRequest(1000, 20)]
    run = simulate(cfg, reqs, concurrency=2)
    alone = simulate(cfg, [SimRequest(1000, 20)]).results[0].ttft  # an idle engine: at once
    step = run.results[0].tpot  # about the long request's decode step
    assert step
    extra = run.results[2].ttft - alone
    assert (steps - 0.5) * step < extra < (steps + 1.5) * step, (extra, step)
    # the last of a level's requests arrives at an idle engine: no wait
    two = simulate(cfg, [SimRequest(1000, 20), SimRequest(1000, 20)], concurrency=1)
    assert two.results[1].ttft == pytest.approx(two.results[0].ttft)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_closed_loop_runs_the_same_in_phases_and_in_single_steps(engine: str) -> None:
    reqs = [SimRequest(800 + 11 * (i % 7), 60 + 23 * (i % 5)) for i in range(24)]
    cfg = _cfg(engine)
    fast = simulate(cfg, reqs, concurrency=6)
    slow = simulate(cfg, reqs, concurrency=6, streaks=False)
    assert fast.steps == slow.steps
    for a, b in zip(fast.results, slow.results, strict=True):
        assert (a.first_token_at, a.finished_at) == pytest.approx(
            (b.first_token_at, b.finished_at), abs=1e-9)
