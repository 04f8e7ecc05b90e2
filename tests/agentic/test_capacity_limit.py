"""The capacity search over real HTTP finds the threshold of a server whose limit is set by
construction (tests/agentic/imx_limit_server.py), within one bisection step."""

from __future__ import annotations

from infermatrix.capacity import CapacitySettings, Footprint, SloTier, Target, find_capacity_sync
from infermatrix.client import BenchConfig
from infermatrix.client.affinity import TRTLLM, X_SESSION_ID
from infermatrix.client.session_sources import Dist, SyntheticSource, SyntheticSpec
from infermatrix.client.sessions import LevelPlan, run_level_sync
from infermatrix.client.tokenizer import WordTokenizer

LIMIT = 11
# fast requests stream at up to 500 tok/s (150+ on a loaded 2-core machine), slow ones at
# 40 tok/s: 80 tok/s separates them with a wide margin on both sides
TIER = SloTier(name="T", min_output_speed=80.0, max_ttft_s=1.0)


def tiny_sessions(delay_s: float = 0.0) -> SyntheticSource:
    c = lambda v: Dist(kind="constant", value=v)  # noqa: E731
    spec = SyntheticSpec(
        sessions=64,
        turns=c(6),
        system_prompt_tokens=c(20),
        user_tokens=c(10),
        # the server counts agents, not requests in flight, so at LIMIT + 1 agents every turn
        # after an agent's first is slow however long the client's turn-around between turns
        # (imx_limit_server.py)
        output_tokens=c(40),
        tool_delay_s=c(delay_s),
    )
    return SyntheticSource(spec, WordTokenizer())


def cfg(url: str) -> BenchConfig:
    return BenchConfig(
        backend="openai-chat",
        base_url=url,
        ignore_eos=True,
        timeouts={"connect": 5, "idle": 10, "total": 30},
    )


def test_search_finds_the_constructed_limit(limit_server) -> None:
    srv = limit_server(LIMIT)
    # lanes start at turn 0, no mid-session join: that window opens at the last lane's first
    # token and is known only once every first request has ended (MeasuredWindow), and past
    # the limit a first answer here takes ~1 s, longer than this 0.6 s window: a level would be
    # judged on the few turns of lanes that happened to finish early
    settings = CapacitySettings(duration_s=0.6, warmup_s=0.2, max_concurrency=64, flush_cache=False,
                                mid_session=False)
    doc = find_capacity_sync(
        Target(cfg(srv.base_url)),
        tiny_sessions(),
        [TIER],
        Footprint(gpus=4, usd_per_gpu_hour=2.0),
        settings,
    )
    tier = doc["tiers"][0]
    # within one bisection step of the constructed limit, and bracketed by a failing level
    assert LIMIT - 1 <= tier["passing_concurrency"] <= LIMIT, doc["levels"]
    assert tier["first_failing"] == tier["passing_concurrency"] + 1
    assert tier["agents_per_gpu"] == tier["passing_concurrency"] / 4
    assert tier["agents_per_usd_hour"] == tier["passing_concurrency"] / 8.0
    assert tier["agents_per_kw"] is None  # no power measured: no per-kW figure
    searched = [lv["concurrency"] for lv in doc["levels"]]
    assert searched[:5] == [1, 2, 4, 8, 16]  # coarse doubling first, then bisection


def test_affinity_reaches_the_server(limit_server) -> None:
    srv = limit_server(100)
    plan = LevelPlan(agents=1, duration_s=0.3, mid_session=False)
    run_level_sync(cfg(srv.base_url), tiny_sessions(), plan, X_SESSION_ID)
    last = srv.get_json("/debug/last")
    assert last["x_session_id"].startswith("syn-0-") and last["disaggregated_params"] is None
    assert last["ignore_eos"] is True and last["max_tokens"] == 40
    # closed loop: the conversation so far (system, user, assistant, user, ...) is resent
    assert last["roles"][:4] == ["system", "user", "assistant", "user"]
    run_level_sync(cfg(srv.base_url), tiny_sessions(), plan, TRTLLM)
    last = srv.get_json("/debug/last")
    assert last["x_session_id"] is None
    assert last["disaggregated_params"]["conversation_id"].startswith("syn-0-")
