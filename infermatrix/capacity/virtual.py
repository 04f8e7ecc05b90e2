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

The simulator has no stop time, so a level generates a fixed number of turns per lane: a first
pass with a few turns shows how long a turn cycle takes at this load, and the level is replayed
with enough turns that every lane is still busy when the measured window closes.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ..catalog.loader import Catalog
from ..client.affinity import NONE
from ..client.config import BenchConfig
from ..client.session_sources import Session, SessionSource
from ..client.sessions import LevelOutcome, LevelPlan, TurnRecord, summarize
from ..client.tokenizer import Tokenizer, load_tokenizer
from ..plan.measurement import CapacityMeasurement, capacity_measurement
from ..sim import SimConfig, SimRequest, SimRun, segment_hashes, simulate
from .recipe import affinity_of, deployment_of, identity
from .run import CapacitySettings, Target, capacity_document, settings_of
from .search import CapacitySearch
from .sources import source_of
from .tiers import SloTier

FIRST_PASS_TURNS = 6  # turns per lane of the first level's first pass (measures the turn cycle)
COVER_MARGIN = 1.15  # generate this many more turns than the last turn cycle says are needed
# The prefix cache is simulated at this granularity at least (tokens per block): agent contexts
# run to 100K+ tokens, and per-block bookkeeping at 16 tokens made a level cost minutes. It
# changes reuse by under a block per request (P25 speed unchanged, P95 TTFT within ~10% at
# sub-second values, where the tiers sit at 5-10 s); the document records it.
CACHE_BLOCK_TOKENS = 256


@dataclass(frozen=True)
class _Turn:
    lane: int
    conversation_id: str
    turn: int
    first: bool  # the lane's first request: mid-session, cold cache, never measured


class _Lanes:
    """The requests of ``agents`` closed-loop lanes, each ``turns`` requests long."""

    def __init__(self, source: SessionSource, tok: Tokenizer, block_size: int, agents: int,
                 s: CapacitySettings) -> None:
        self.source, self.tok, self.bs, self.agents, self.s = source, tok, block_size, agents, s

    def build(self, turns: int) -> tuple[list[SimRequest], list[_Turn]]:
        reqs: list[SimRequest] = []
        info: list[_Turn] = []
        for k in range(self.agents):
            self._lane(k, turns, reqs, info)
        return reqs, info

    def _lane(self, k: int, turns: int, reqs: list[SimRequest], info: list[_Turn]) -> None:
        rng = random.Random(f"{self.s.seed}:lane:{k}")
        prev: int | None = None
        delay = 0.0
        use, made = 0, 0
        while made < turns:
            index = k + use * self.agents
            use += 1
            session = self.source.session(index)
            reuse = index // len(self.source)
            cid = session.conversation_id if not reuse else f"{session.conversation_id}#{reuse}"
            start = rng.randrange(len(session.turns)) if self.s.mid_session and made == 0 else 0
            context: list[tuple[Hashable, int]] = []
            for t in range(start):  # earlier turns already in the context (mid-session start)
                self._add(context, session, cid, t)
            for t in range(start, len(session.turns)):
                if made >= turns:
                    return
                turn = session.turns[t]
                grown = self._add(list(context) if session.context == "delta" else [],
                                  session, cid, t, answer=False)
                tokens = sum(n for _, n in grown)
                if (self.s.max_context_tokens
                        and tokens + turn.output_tokens > self.s.max_context_tokens):
                    delay = 0.0  # the client ends the session and starts the next one at once
                    break
                reqs.append(SimRequest(tokens, turn.output_tokens,
                                       hashes=segment_hashes(grown, self.bs), session=cid,
                                       after=prev, delay=delay))
                info.append(_Turn(k, cid, t, made == 0))
                prev, made = len(reqs) - 1, made + 1
                context = grown + [(("answer", cid, t), turn.output_tokens)]
                delay = turn.tool_delay_s

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


def _outcome(run: SimRun, info: list[_Turn], agents: int, s: CapacitySettings,
             source: SessionSource, model: str) -> LevelOutcome:
    """The simulated requests as the client's turn records of one level."""
    t_measure, t_stop = s.warmup_s, s.warmup_s + s.duration_s
    turns: list[TurnRecord] = []
    for res, meta in zip(run.results, info, strict=True):
        if res.sent_at >= t_stop:
            continue  # the client starts no turn after the window closes
        tr = TurnRecord(lane=meta.lane, conversation_id=meta.conversation_id, turn=meta.turn,
                        start=res.sent_at, input_tokens=res.prompt_tokens,
                        input_tokens_server=res.prompt_tokens, cached_tokens=res.cached_tokens,
                        output_tokens_requested=res.max_tokens,
                        measured=t_measure <= res.sent_at and not meta.first,
                        error=None if res.error is None else "rejected", error_detail=res.error or "")
        if res.error is None and res.ttft is not None and res.e2el is not None:
            tr.output_tokens, tr.ttft, tr.e2el = res.completion_tokens, res.ttft, res.e2el
            gen = res.e2el - res.ttft
            tr.output_speed = res.completion_tokens / gen if gen > 0 else None
        turns.append(tr)
    ends = [t.start + t.e2el for t in turns if t.measured and t.e2el is not None]
    return LevelOutcome(
        LevelPlan(agents=agents, duration_s=s.duration_s, warmup_s=s.warmup_s,
                  mid_session=s.mid_session, seed=s.seed,
                  max_context_tokens=s.max_context_tokens),
        model, "virtual", source.name, NONE.describe(), turns, [], t_measure,
        max(ends, default=t_stop), sessions_started=len({t.conversation_id for t in turns}))


def _lanes_cover(run: SimRun, info: list[_Turn], agents: int, t_stop: float
                 ) -> tuple[bool, float]:
    """(every lane was still sending at ``t_stop``, the fastest lane's model seconds per turn)."""
    last = [0.0] * agents
    sent = [0] * agents
    for res, meta in zip(run.results, info, strict=True):
        last[meta.lane] = max(last[meta.lane], res.sent_at)
        sent[meta.lane] += res.sent_at < t_stop
    cycle = min(min(t, t_stop) / max(n, 1) for t, n in zip(last, sent, strict=True))
    return min(last, default=t_stop) >= t_stop, max(cycle, 1e-3)


class VirtualLevels:
    """``await levels(agents)`` → the level summary, measured in virtual time."""

    def __init__(self, cat: Catalog, recipe_id: str, source: SessionSource, s: CapacitySettings,
                 tok: Tokenizer, log: Callable[[str], None]) -> None:
        self.cat, self.recipe_id, self.source, self.s, self.tok = cat, recipe_id, source, s, tok
        self.log = log
        self.model = ""
        self.block_size = 0
        self.cycles: dict[int, float] = {}  # agents -> model seconds per turn of a lane

    def _config(self, agents: int) -> SimConfig:
        sim = SimConfig.from_recipe(self.cat, self.recipe_id, params={"CONC": agents})
        if sim.block_size < CACHE_BLOCK_TOKENS:
            sim = SimConfig.from_recipe(self.cat, self.recipe_id, params={"CONC": agents},
                                        block_size=CACHE_BLOCK_TOKENS)
        self.model, self.block_size = sim.served_model_name, sim.block_size
        return sim

    def measure(self, agents: int) -> dict[str, Any]:
        sim = self._config(agents)
        lanes = _Lanes(self.source, self.tok, sim.block_size, agents, self.s)
        t_stop = self.s.warmup_s + self.s.duration_s
        # turns come faster with fewer agents: take the cycle of the nearest level below (enough
        # turns), else of the nearest above (too few, then replayed with the measured cycle)
        below = [a for a in self.cycles if a <= agents]
        near = max(below) if below else min(self.cycles, default=None)
        turns = (FIRST_PASS_TURNS if near is None
                 else math.ceil(COVER_MARGIN * t_stop / self.cycles[near]) + 1)
        steps = 0
        while True:
            reqs, info = lanes.build(turns)
            run = simulate(sim, reqs, record_token_times=False, seed=self.s.seed)
            steps += run.steps
            covered, self.cycles[agents] = _lanes_cover(run, info, agents, t_stop)
            if covered:
                break
            turns = max(turns + 1, math.ceil(COVER_MARGIN * t_stop / self.cycles[agents]) + 1)
        summary = summarize(_outcome(run, info, agents, self.s, self.source, self.model))
        summary["between"] = {"fresh_deployment": True}
        summary["elapsed_s"] = run.wall_seconds
        summary["avg_power_w"] = None  # never estimated: power is measured or absent
        summary["sim_steps"] = steps
        self.log(f"  agents={agents:<5} P25 speed {_f(summary['p25_output_speed'])} tok/s, "
                 f"P95 TTFT {_f(summary['p95_ttft_ms'])} ms, {summary['completed']} ok / "
                 f"{summary['failed']} failed (virtual, {run.wall_seconds:.1f} s wall)")
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
    m = measurement or capacity_measurement(cat, workload_name)
    tok = load_tokenizer(None)
    source = source_of(m.sessions, cat.root, tok)
    s = settings_of(m)
    levels = VirtualLevels(cat, recipe_id, source, s, tok, log or (lambda _m: None))
    tiers = [SloTier.model_validate(t.model_dump()) for t in m.tiers]
    search = CapacitySearch(levels, tiers, start=m.start, max_concurrency=m.max_concurrency,
                            resolution=m.resolution, resolution_pct=s.resolution_pct,
                            max_error_rate=m.max_error_rate,
                            time_budget_s=m.time_budget_s)
    result = asyncio.run(search.run())
    ident = identity(cat, recipe_id, workload_name, simulated=True, launcher="virtual")
    ident["infermatrix"].update((meta or {}).get("infermatrix", {}))
    target = Target(BenchConfig(base_url=f"virtual://{recipe_id}"),
                    affinity=affinity_of(cat, recipe_id))
    doc = capacity_document(result, deployment_of(cat, recipe_id), s, target, source,
                            levels.model or recipe_id, {**(meta or {}), **ident})
    doc["sessions"] = m.sessions.model_dump(mode="json")
    doc["virtual"] = {"cache_block_tokens": levels.block_size}
    return doc


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0f}"

