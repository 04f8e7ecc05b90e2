"""SGLang's --scheduler-recv-interval in the simulator: new requests are taken in only every N
decode steps (or right after a step that prefills), so they wait in TTFT; decode phases admit
them exactly where stepping one step at a time does."""

from __future__ import annotations

import random

import pytest
from sim_helpers import assert_phases_match_steps, catalog, config

from infermatrix.sim import SimConfig, SimRequest, simulate
from infermatrix.sim.engine_args import engine_knobs
from infermatrix.sim.recv import RecvSkipper


def _stepwise(count: int, every: int, first_prefills: bool, steps: int) -> tuple[int, list[int]]:
    """SGLang's rule applied one step at a time: (count after, steps after which it polls)."""
    polls = []
    for i in range(steps):
        count += every if (i == 0 and first_prefills) else 1
        if count >= every:
            count = 0
            polls.append(i)
    return count, polls


def test_the_closed_forms_follow_the_rule_step_by_step() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        every = rng.randint(1, 40)
        count, first_prefills = rng.randint(0, every - 1), rng.random() < 0.3
        steps = rng.randint(1, 120)
        after, polls = _stepwise(count, every, first_prefills, steps)
        skip = RecvSkipper(every)
        skip.count = count
        for start in range(steps):
            later = [p for p in polls if p >= start]
            k = skip.first_receive(first_prefills, start)
            assert k == later[0] if later else k >= steps, (every, count, start, k, polls)
        assert skip.advance(steps, first_prefills) == (bool(polls) and polls[-1] == steps - 1)
        assert skip.count == after


def _sglang(recv_interval: int) -> SimConfig:
    return config("H200", tp=8, model="deepseek-r1", precision="fp8", engine="sglang",
                  max_num_seqs=64, recv_interval=recv_interval)


def _requests(n: int) -> list[SimRequest]:
    # one long request decoding throughout; the others arrive during its decode
    return [SimRequest(1000, 400, arrival=0.0)] + [
        SimRequest(900 + 13 * i, 60, arrival=0.3 + 0.137 * i) for i in range(n)]


def test_requests_wait_for_the_poll_in_ttft() -> None:
    reqs = _requests(12)
    every_step, every_30 = simulate(_sglang(1), reqs), simulate(_sglang(30), reqs)
    waits = [b.ttft - a.ttft for a, b in zip(every_step.results[1:], every_30.results[1:],
                                             strict=True)]
    step = every_step.results[0].tpot
    assert step and step > 0
    # each waits for the next poll: at most 30 decode steps, and on average about half that.
    # (A request taken in with others can start its first token up to a step sooner than when
    # it came in alone behind another's prefill step, so a wait is never below minus a step.)
    assert all(-step <= w <= 31 * step for w in waits), (waits, step)
    assert 5 * step < sum(waits) / len(waits) < 25 * step, (waits, step)
    # an idle engine takes a request in at once
    alone = [SimRequest(1000, 50, arrival=0.0)]
    assert simulate(_sglang(30), alone).results[0].ttft == pytest.approx(
        simulate(_sglang(1), alone).results[0].ttft)


@pytest.mark.parametrize("every", [3, 10, 30])
def test_decode_phases_take_requests_in_where_stepping_does(every: int) -> None:
    assert_phases_match_steps(_sglang(every), _requests(20))


def test_the_launch_arg_sets_it() -> None:
    recipe = catalog().recipes["deepseek-r1-0528/b200-sglang-fp8"]
    pool = recipe.topology.pools[0]
    assert "recv_interval" not in engine_knobs(recipe, pool, recipe.params)
    polled = pool.model_copy(update={"args": {**pool.args, "scheduler-recv-interval": "${N}"}})
    assert engine_knobs(recipe, polled, {**recipe.params, "N": 30})["recv_interval"] == 30
    assert _sglang(30).summary()["recv_interval"] == 30
