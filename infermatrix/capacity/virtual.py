"""Capacity search in virtual time: closed-loop agents played through the simulator's
discrete-event kernel, no server and no sleeping.

Each level turns ``agents`` lanes of sessions (from the workload's session source, in the
order the client's agents would run them) into chains of ``sim.SimRequest``: a turn follows
the previous one (``after``) by its tool delay, a lane's next session follows its last. The
prompt of a turn is the whole conversation so far, described by segment identities so the
simulated prefix cache reuses exactly what a real server's would (shared system prompt, earlier
turns); every level runs on a fresh deployment, so it starts cold as the real search does
after its cache-bust. The timings become the client's turn records and are summarised by
``client.sessions.summarize``; the search and tier check are ``capacity.search`` /
``capacity.tiers``; the document is ``capacity.run.capacity_document``'s, marked simulated.

Like the client, the simulated lanes send no turn after the measured window closes (the
simulator's ``stop_at``); what was sent runs to its end. Each lane is planned with enough
turns to keep sending until then: a turn is paced by the time to first token and output speed
of a level already simulated (a first pass with a few turns per lane gives the first level its
pace), and a level where some lane ran dry before the window closed is replayed further. Turns
planned past the close are never sent, so planning further changes nothing measured.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ..catalog.loader import Catalog
from ..client.affinity import NONE
from ..client.config import BenchConfig
from ..client.session_sources import Session, SessionSource
from ..client.sessions import (
    LaneSchedule,
    LaneSession,
    LevelOutcome,
    LevelPlan,
    MeasuredWindow,
    TurnRecord,
    summarize,
)
from ..client.tokenizer import Tokenizer, load_tokenizer
from ..plan.jobs import conc_params
from ..plan.measurement import CapacityMeasurement, capacity_measurement
from ..sim import SegmentHasher, SimConfig, SimRequest, SimRun, segment_hashes, simulate
from .recipe import affinity_of, footprint_of, identity
from .run import CapacitySettings, Target, capacity_document, settings_of
from .search import CapacitySearch
from .sources import source_of
from .tiers import SloTier, level_line

FIRST_PASS_TURNS = 6  # turns per lane of the first level's first pass (measures the pace)
COVER_MARGIN = 1.15  # plan lanes this much further than the pace says they must reach
# The prefix cache is simulated at this granularity at least (tokens per block): agent contexts
# run to 100K+ tokens (~27K a request on average), and per-block bookkeeping at 16 tokens made a
# level cost minutes. It changes reuse by under a block per request, less than the ~750 tokens
# a turn adds (GB300 DEP8 at 1,816 agents: P25 speed 23.47 tok/s at 256, 23.59 at 512, P95
# TTFT 0.18 and 0.19 s, where the tiers sit at 20-60 tok/s and 5-10 s; 10.3 against 8.0 s of
# CPU); the document records it.
CACHE_BLOCK_TOKENS = 512


@dataclass(frozen=True)
class _Pace:
    """How fast turns went at a simulated level: a lane's turn is planned to take ``ttft`` +
    its output tokens / ``speed`` (the fast side of that level, so lanes get enough turns)."""

    ttft: float
    speed: float

    @classmethod
    def of(cls, run: SimRun) -> _Pace:
        ttfts, speeds = [], []
        for r in run.results:
            if r.error is None and r.ttft is not None and r.e2el is not None:
                ttfts.append(r.ttft)
                if r.e2el > r.ttft:
                    speeds.append(r.completion_tokens / (r.e2el - r.ttft))
        ttfts.sort()
        speeds.sort()
        return cls(ttft=ttfts[len(ttfts) // 4] if ttfts else 0.0,
                   speed=speeds[3 * len(speeds) // 4] if speeds else math.inf)


@dataclass(frozen=True)
class _Turn:
    lane: int
    conversation_id: str
    turn: int
    first: bool  # the lane's first request: mid-session, cold cache, never measured


@dataclass(frozen=True)
class _SessionPlan:
    """The requests one session makes from turn ``start`` on, the same at every level (a lane
    sends a prefix of them): per turn (index, prompt tokens, output tokens, prefix-cache
    hashes, tool delay after it). A prompt that grows turn by turn has the first hashes of
    one ``chain`` (a count in ``turns``, sliced when sent: one tuple a session, not one a
    turn); a full-context prompt has its own tuple. ``cut``: the session ended early because
    its next turn would pass the context limit (the lane starts its next session at once).
    ``warm``: the tokens of the turns before ``start`` (a conversation joined under way)."""

    conversation_id: str
    turns: list[tuple[int, int, int, int | tuple[int, ...], float]]
    cut: bool
    chain: tuple[int, ...] = ()
    warm: int = 0

    def hashes(self, ref: int | tuple[int, ...]) -> tuple[int, ...]:
        return self.chain[:ref] if isinstance(ref, int) else ref


class _Lanes:
    """The requests of ``agents`` closed-loop lanes: ``turns`` each, or, with a pace, as many
    as reach ``until`` seconds. ``sessions`` and ``plans`` are kept across the levels of a
    search (drawing and hashing a session are deterministic)."""

    def __init__(self, source: SessionSource, tok: Tokenizer, block_size: int, agents: int,
                 s: CapacitySettings, sessions: dict[int, Session] | None = None,
                 plans: dict[tuple[LaneSession, int], _SessionPlan] | None = None) -> None:
        self.source, self.tok, self.bs, self.agents, self.s = source, tok, block_size, agents, s
        self.sessions = {} if sessions is None else sessions
        self.plans = {} if plans is None else plans
        self.schedule = LaneSchedule(source, agents, s.mid_session, self.session)

    def session(self, index: int) -> Session:
        got = self.sessions.get(index)
        if got is None:
            got = self.sessions[index] = self.source.session(index)
        return got

    def build(self, turns: int, pace: _Pace | None = None, until: float = math.inf
              ) -> tuple[list[SimRequest], list[_Turn]]:
        reqs: list[SimRequest] = []
        info: list[_Turn] = []
        for k in range(self.agents):
            self._lane(k, turns, pace, until, reqs, info)
        return reqs, info

    def _lane(self, k: int, turns: int, pace: _Pace | None, until: float,
              reqs: list[SimRequest], info: list[_Turn]) -> None:
        rng = random.Random(f"{self.s.seed}:lane:{k}")
        prev: int | None = None
        delay = 0.0
        made = 0
        clock = 0.0  # when the lane's next turn is due, by the pace

        def enough() -> bool:
            return made >= turns if pace is None else clock >= until

        for chosen in self.schedule.lane(k, rng):
            if enough():
                return
            plan = self.plan(chosen)
            cid = plan.conversation_id
            for t, tokens, output_tokens, ref, tool_delay in plan.turns:
                if enough():
                    return
                # a conversation joined under way starts warm: its earlier turns were served
                # before the level, as in the steady state the client waits for (docs/agentic.md)
                warm = plan.warm if made == 0 and t == chosen.start else 0
                reqs.append(SimRequest(tokens, output_tokens, hashes=plan.hashes(ref),
                                       session=cid, after=prev, delay=delay, warm_tokens=warm))
                info.append(_Turn(k, cid, t, made == 0))
                prev, made = len(reqs) - 1, made + 1
                if pace is not None:
                    clock += delay + pace.ttft + output_tokens / pace.speed
                delay = tool_delay
            if plan.cut:
                delay = 0.0  # the client ends the session and starts the next one at once

    def plan(self, chosen: LaneSession) -> _SessionPlan:
        """A lane's conversation: its requests from its first turn on (drawn and hashed once)."""
        key = (chosen, self.bs)
        got = self.plans.get(key)
        if got is None:
            got = self.plans[key] = self._plan(chosen)
        return got

    def _plan(self, chosen: LaneSession) -> _SessionPlan:
        session, start = self.session(chosen.index), chosen.start
        cid = chosen.conversation_id(session)
        context: list[tuple[Hashable, int]] = []
        for t in range(start):  # earlier turns already in the context (mid-session start)
            self._add(context, session, cid, t)
        delta = session.context == "delta"
        warm = sum(n for _, n in context) if delta else 0
        # delta: the prompt grows turn by turn; its first `hashed` segments (`held` tokens)
        # are hashed already
        hasher, hashed, held = SegmentHasher(self.bs), 0, 0
        out: list[tuple[int, int, int, int | tuple[int, ...], float]] = []
        for t in range(start, len(session.turns)):
            turn = session.turns[t]
            grown = self._add(list(context) if delta else [], session, cid, t, answer=False)
            tokens = held + sum(n for _, n in grown[hashed:])
            if (self.s.max_context_tokens
                    and tokens + turn.output_tokens > self.s.max_context_tokens):
                return _SessionPlan(cid, out, True, hasher.hashes, warm)
            hashes: int | tuple[int, ...]
            if delta:  # grown extends the prompt hashed so far
                for ident, n in grown[hashed:]:
                    hasher.add(ident, n)
                hashed, held, hashes = len(grown), tokens, hasher.count
            else:
                hashes = segment_hashes(grown, self.bs)
            out.append((t, tokens, turn.output_tokens, hashes, turn.tool_delay_s))
            context = grown + [(("answer", cid, t), turn.output_tokens)]
        return _SessionPlan(cid, out, False, hasher.hashes, warm)

    def _add(self, context: list[tuple[Hashable, int]], session: Session, cid: str, t: int,
             answer: bool = True) -> list[tuple[Hashable, int]]:
        """``context`` with turn ``t``'s messages (and its answer) appended, as segments."""
        turn = session.turns[t]
        if session.context == "full":
            context = _blocks(turn.block_ids, self.source_block, turn_tokens(turn, self.tok),
                              (cid, t))
        else:
            n = turn_tokens(turn, self.tok)
            system = session.meta.get("system_prompt_tokens", 0) if t == 0 else 0
            if system:  # one shared system prompt: sessions reuse each other's prefix of it
                context.append(("system", system))
            context.append((("user", cid, t), n - system))
        if answer:
            context.append((("answer", cid, t), turn.output_tokens))
        return context

    @property
    def source_block(self) -> int:
        return getattr(self.source, "bs", self.bs)


def turn_tokens(turn: Any, tok: Tokenizer) -> int:
    """Tokens a turn's messages add (its whole request in full context mode)."""
    if turn.tokens is not None:
        return turn.tokens
    return sum(tok.count_many([m.get("content") or "" for m in turn.content()]))


def _blocks(ids: tuple[int, ...], bs: int, tokens: int, tail: Hashable
            ) -> list[tuple[Hashable, int]]:
    """A full-context request: its shared blocks (Mooncake hash ids), then a private tail."""
    out: list[tuple[Hashable, int]] = []
    for h in ids:
        if (len(out) + 1) * bs > tokens:
            break
        out.append((("block", h), bs))
    return [*out, (("tail", tail), tokens - len(out) * bs)]


def _window(run: SimRun, info: list[_Turn], plan: LevelPlan) -> MeasuredWindow:
    """The level's measured window, as the client opens it: after the warm-up and every
    lane's first token (a simulated request sent runs to its end, so each has one)."""
    window = MeasuredWindow(0.0, plan)
    for res, meta in zip(run.results, info, strict=True):
        if meta.first:
            window.first_token(res.first_token_at if res.first_token_at is not None
                               else res.sent_at)
    return window


def _outcome(run: SimRun, info: list[_Turn], plan: LevelPlan, window: MeasuredWindow,
             source: SessionSource, model: str) -> LevelOutcome:
    """The simulated requests as the client's turn records of one level."""
    t_measure, t_stop = window.start, window.stop
    turns: list[TurnRecord] = []
    for res, meta in zip(run.results, info, strict=True):
        if res.sent_at >= t_stop:
            continue  # the client starts no turn after the window closes
        tr = TurnRecord(lane=meta.lane, conversation_id=meta.conversation_id, turn=meta.turn,
                        start=res.sent_at, input_tokens=res.prompt_tokens,
                        input_tokens_server=res.prompt_tokens, cached_tokens=res.cached_tokens,
                        output_tokens_requested=res.max_tokens,
                        measured=window.inside(res.sent_at),
                        error=None if res.error is None else "rejected", error_detail=res.error or "")
        if res.error is None and res.ttft is not None and res.e2el is not None:
            tr.output_tokens, tr.ttft, tr.e2el = res.completion_tokens, res.ttft, res.e2el
            gen = res.e2el - res.ttft
            tr.output_speed = res.completion_tokens / gen if gen > 0 else None
        turns.append(tr)
    ends = [t.start + t.e2el for t in turns if t.measured and t.e2el is not None]
    return LevelOutcome(
        plan,
        model, "virtual", source.name, NONE.describe(), turns, [], t_measure,
        max(ends, default=t_stop), sessions_started=len({t.conversation_id for t in turns}))


def _lanes_cover(run: SimRun, info: list[_Turn], agents: int, t_end: float) -> bool:
    """No lane ran dry before ``t_end`` (the window's close): each lane's last request was
    still running then, or was ready only after it (not sent), so a turn the lane was not
    given would not have been sent either."""
    last = [-math.inf] * agents
    for res, meta in zip(run.results, info, strict=True):
        done = res.finished_at if res.finished_at is not None else res.sent_at
        last[meta.lane] = max(last[meta.lane], done)
    return min(last, default=t_end) >= t_end


class VirtualLevels:
    """``await levels(agents)`` → the level summary, measured in virtual time."""

    def __init__(self, cat: Catalog, recipe_id: str, source: SessionSource, s: CapacitySettings,
                 tok: Tokenizer, log: Callable[[str], None], tiers: Sequence[SloTier] = ()) -> None:
        self.cat, self.recipe_id, self.source, self.s, self.tok = cat, recipe_id, source, s, tok
        self.log, self.tiers = log, tiers  # each level's verdicts in the log
        self.model = ""
        self.block_size = 0
        self.paces: dict[int, _Pace] = {}  # agents -> how fast its turns went
        self.sessions: dict[int, Session] = {}  # the source's sessions drawn so far
        self.plans: dict[tuple[LaneSession, int], _SessionPlan] = {}  # and their requests

    def _config(self, agents: int) -> SimConfig:
        params = conc_params(None, agents)  # a fresh deployment per level
        sim = SimConfig.from_recipe(self.cat, self.recipe_id, params=params)
        if sim.block_size < CACHE_BLOCK_TOKENS:
            sim = SimConfig.from_recipe(self.cat, self.recipe_id, params=params,
                                        block_size=CACHE_BLOCK_TOKENS)
        self.model, self.block_size = sim.served_model_name, sim.block_size
        return sim

    def measure(self, agents: int) -> dict[str, Any]:
        sim = self._config(agents)
        lanes = _Lanes(self.source, self.tok, sim.block_size, agents, self.s, self.sessions,
                       self.plans)
        plan = self.s.level_plan(agents)
        t_stop = self.s.warmup_s + self.s.duration_s  # unless the first answers come later
        # turns come faster with fewer agents: pace by the nearest level below (enough turns),
        # else by the nearest above (maybe too few, then replayed at this level's own pace)
        below = [a for a in self.paces if a <= agents]
        near = max(below) if below else min(self.paces, default=None)
        pace = None if near is None else self.paces[near]
        until = COVER_MARGIN * t_stop
        steps = passes = 0
        while True:
            passes += 1
            reqs, info = lanes.build(FIRST_PASS_TURNS, pace, until)
            run = simulate(sim, reqs, record_token_times=False, seed=self.s.seed, stop_at=t_stop)
            steps += run.steps
            self.paces[agents] = _Pace.of(run)
            window = _window(run, info, plan)
            if window.stop > t_stop:  # the cold first requests drained after the warm-up:
                t_stop = window.stop  # the window opens later, replayed to its close
                pace, until = self.paces[agents], max(until, COVER_MARGIN * t_stop)
                continue
            if _lanes_cover(run, info, agents, t_stop):
                break
            # replayed twice as far: lanes whose turns are refused at once (over the
            # context limit) outrun any pace, and turns planned past the close cost nothing
            pace, until = self.paces[agents], 2 * until
        summary = summarize(_outcome(run, info, plan, window, self.source, self.model))
        summary["between"] = {"fresh_deployment": True}
        summary["elapsed_s"] = run.wall_seconds
        summary["avg_power_w"] = None  # never estimated: power is measured or absent
        summary["sim_steps"] = steps
        summary["sim_passes"] = passes  # 2+: some lane ran dry too early, the level was replayed
        self.log(level_line(agents, summary, self.tiers, self.s.max_error_rate,
                            note=f"virtual, {run.wall_seconds:.1f} s wall"))
        return summary

    async def __call__(self, agents: int) -> dict[str, Any]:
        return self.measure(agents)


def virtual_capacity(cat: Catalog, recipe_id: str, workload_name: str, *,
                     measurement: CapacityMeasurement | None = None,
                     log: Callable[[str], None] | None = None,
                     meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Search every SLO tier of the agentic workload ``workload_name`` on the simulated
    ``recipe_id`` in virtual time; return the capacity document (marked simulated).
    ``measurement`` defaults to the workload's (see plan.measurement.capacity_measurement)."""
    m = measurement or capacity_measurement(cat, workload_name, recipe_id=recipe_id)
    tok = load_tokenizer(None)
    source = source_of(m.sessions, cat.root, tok)
    s = settings_of(m)
    tiers = [SloTier.model_validate(t.model_dump()) for t in m.tiers]
    levels = VirtualLevels(cat, recipe_id, source, s, tok, log or (lambda _m: None), tiers)
    search = CapacitySearch(levels, tiers, start=m.start, max_concurrency=m.max_concurrency,
                            resolution=m.resolution, resolution_pct=s.resolution_pct,
                            max_error_rate=m.max_error_rate,
                            time_budget_s=m.time_budget_s)
    result = asyncio.run(search.run())
    ident = identity(cat, recipe_id, workload_name, simulated=True, launcher="virtual")
    ident["infermatrix"].update((meta or {}).get("infermatrix", {}))
    target = Target(BenchConfig(base_url=f"virtual://{recipe_id}"),
                    affinity=affinity_of(cat, recipe_id))
    doc = capacity_document(result, footprint_of(cat, recipe_id), s, target, source,
                            levels.model or recipe_id, {**(meta or {}), **ident})
    doc["sessions"] = m.sessions.model_dump(mode="json")
    doc["virtual"] = {"cache_block_tokens": levels.block_size}
    return doc
