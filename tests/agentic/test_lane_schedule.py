"""Which conversations the lanes run and when a level starts measuring: the steady state's mix
from the first request (client.sessions.LaneSchedule, MeasuredWindow), the same for the client
over real HTTP and for the virtual levels."""

from __future__ import annotations

import random
import statistics

from test_capacity_limit import cfg
from test_capacity_virtual import REPO

from infermatrix.capacity import virtual
from infermatrix.capacity.run import CapacitySettings
from infermatrix.capacity.virtual import VirtualLevels
from infermatrix.catalog.loader import load_catalog
from infermatrix.client.session_sources import Dist, SyntheticSource, SyntheticSpec
from infermatrix.client.sessions import LaneSchedule, LevelPlan, run_level_sync, summarize
from infermatrix.client.tokenizer import WordTokenizer, load_tokenizer

TURNS_LOW, TURNS_HIGH = 1, 20


def sessions(turns: Dist, output_tokens: int = 20, user_tokens: int = 20) -> SyntheticSource:
    c = lambda v: Dist(kind="constant", value=v)  # noqa: E731
    spec = SyntheticSpec(sessions=200, turns=turns, system_prompt_tokens=c(30),
                         user_tokens=c(user_tokens), output_tokens=c(output_tokens),
                         tool_delay_s=c(0.0))
    return SyntheticSource(spec, WordTokenizer())


def test_a_lane_joins_a_conversation_in_proportion_to_its_turns() -> None:
    """At a random moment an agent is inside a conversation with probability in proportion to
    the requests that conversation makes, so the lanes' first sessions are drawn that way:
    their mean length is E[T²]/E[T] (13.7 turns for 1-20 alike), not E[T] (10.5). Every lane's
    copy is its own conversation; the sessions after it run in order."""
    source = sessions(Dist(kind="uniform", low=TURNS_LOW, high=TURNS_HIGH))
    agents = 3000
    schedule = LaneSchedule(source, agents, mid_session=True)
    firsts, starts, ids = [], [], set()
    for k in range(agents):
        lane = schedule.lane(k, random.Random(f"0:lane:{k}"))
        first, second = next(lane), next(lane)
        n = len(source.session(first.index).turns)
        firsts.append(n)
        starts.append(first.start / n)
        ids.add(first.conversation_id(source.session(first.index)))
        assert second.index == k and second.start == 0
    by_session = [len(source.session(i).turns) for i in range(len(source))]
    assert [source.turn_count(i) for i in range(len(source))] == by_session  # (the weights)
    biased = sum(n * n for n in by_session) / sum(by_session)
    assert abs(statistics.mean(firsts) - biased) < 0.6, (statistics.mean(firsts), biased)
    assert statistics.mean(firsts) > statistics.mean(by_session) + 2
    assert 0.4 < statistics.mean(starts) < 0.6  # from a turn drawn evenly within it
    assert len(ids) == agents  # no two agents share a conversation
    # without a mid-session start, lane k simply runs sessions k, k + agents, ...
    plain = LaneSchedule(source, 4, mid_session=False).lane(1, random.Random(0))
    assert [next(plain).index for _ in range(3)] == [1, 5, 9]


def test_the_client_measures_only_after_every_lane_has_its_first_token(limit_server) -> None:
    """Over real HTTP, with no warm-up: the first requests (whole contexts, cold) are never
    measured, and no turn is measured that was sent before the last lane's first request had
    its first token (its context prefilled)."""
    srv = limit_server(100)
    plan = LevelPlan(agents=6, duration_s=1.5, warmup_s=0.0, mid_session=True)
    out = run_level_sync(cfg(srv.base_url), sessions(Dist(kind="constant", value=8), 30), plan)
    firsts: dict[int, float] = {}
    for t in out.turns:
        firsts.setdefault(t.lane, t.start + (t.ttft or 0.0))
    assert len(firsts) == plan.agents
    measured = [t for t in out.turns if t.measured]
    assert measured, out.turns
    last_first = max(firsts.values())
    assert all(t.start >= last_first - 1e-6 for t in measured), (last_first, measured[0])


def test_the_client_learns_the_window_as_the_last_first_answer_streams(limit_server) -> None:
    """One lane's first answer (the server's first request: 30 tokens 0.25 s apart) streams for
    longer than the whole level. The window opens at its first token, which the client learns
    as that answer streams, not when it ends: the other lanes stop sending at the window's end
    (they used to go on until the long answer ended, loading the server unmeasured)."""
    srv = limit_server(100, "--first-gap-ms", "250")
    plan = LevelPlan(agents=4, duration_s=1.0, warmup_s=0.0, mid_session=True)
    out = run_level_sync(cfg(srv.base_url), sessions(Dist(kind="constant", value=8), 30), plan)
    t0 = out.records[0].start - out.turns[0].start  # turn starts are relative to the level's
    stop = out.t_measure - t0 + plan.duration_s
    slow = max(out.turns, key=lambda t: t.e2el or 0.0)
    assert slow.start + (slow.e2el or 0.0) > stop + 4.0  # the case this test is about
    assert [t for t in out.turns if t.measured]
    late = [round(t.start, 2) for t in out.turns if t.start > stop + 1.0]
    assert not late, (stop, late)


def test_a_virtual_level_opens_its_window_after_the_cold_first_requests(monkeypatch) -> None:
    """In virtual time the window opens as the client's does: the warm-up here (1 s) is shorter
    than the lanes' first prefills (64 × 4,000 new tokens; the earlier turns start warm), so it
    opens at the last of their first tokens, and the level still measures its full duration
    after that."""
    tok = load_tokenizer(None)
    source = sessions(Dist(kind="constant", value=10), 100, user_tokens=4000)
    s = CapacitySettings(duration_s=20, warmup_s=1, mid_session=True)
    levels = VirtualLevels(load_catalog(REPO), "llama-3.1-70b-instruct/mi300x-vllm-fp8", source,
                           s, tok, lambda _m: None)
    got = {}

    def keep(outcome):  # the turn records behind the summary
        got["outcome"] = outcome
        return summarize(outcome)

    monkeypatch.setattr(virtual, "summarize", keep)
    levels.measure(64)
    out = got["outcome"]
    firsts: dict[int, float] = {}
    for t in out.turns:
        firsts.setdefault(t.lane, t.start + (t.ttft or 0.0))
    last_first = max(firsts.values())
    assert last_first > s.warmup_s  # the case this test is about
    assert out.t_measure == last_first
    measured = [t for t in out.turns if t.measured]
    assert measured and min(t.start for t in measured) >= last_first
    assert max(t.start for t in measured) > last_first + 0.5 * s.duration_s
