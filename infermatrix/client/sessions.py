"""Closed-loop agent sessions: the AA-AgentPerf load shape.

Each of N agents (lanes) runs conversations one after another: send the turn with the whole
conversation so far, stream the answer, wait the tool delay, send the next turn. The load is
closed: an agent never has more than one request in flight, so "concurrency" is the number of
agents, and the context grows turn by turn, which is what makes prefix reuse dominate.

Every turn goes through the client's own request path (``backends.build_body`` →
``request.send`` → ``metrics.derive``): one streaming implementation, one set of definitions.
Agentic output speed = output_tokens / (E2EL − TTFT) per request.

One level = one ``run_level`` call:

- warm-up lanes start mid-session (``LaneSchedule``): a lane's first conversation is drawn in
  proportion to its number of turns and begins at a random turn, with the earlier turns (and
  filler answers) already in its context, so the context-length mix is that of a steady state
  from the first second instead of every agent sending turn 0 together. (Drawn per session, as
  the later ones are, long conversations would be under-represented: at a random moment an
  agent is more likely inside a long conversation than a short one.) That first request meets
  a cold cache, so it is never measured; nor is anything sent during ``warmup_s``, nor before
  every lane's first request has its first token (the cold contexts' prefill burst has
  drained), whichever is later (``MeasuredWindow``);
- every prompt starts with the level's salt, so no prefix cached by an earlier level is reused
  (cache-bust); sessions reused within a level get their own salt after the system prompt;
- after ``duration_s`` of measurement no new turn starts and in-flight turns finish (drain).

This module runs the level (``run_level``); its pieces have their own modules:
``level_records.py`` (plan, turn and outcome), ``conversation.py``, ``lane_schedule.py``,
``measured_window.py``, ``usage_tap.py`` and ``level_summary.py`` (re-exported here);
``multi_turn.py`` runs ``--dataset-name multi-turn`` on it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from time import perf_counter

from . import eventloop
from .affinity import NONE, Affinity
from .backends import build_body
from .config import BenchConfig
from .conversation import Conversation, flatten
from .http import HTTPClient
from .lane_schedule import LaneSchedule, LaneSession
from .level_records import LevelOutcome, LevelPlan, TurnRecord
from .level_summary import SCHEMA, SCHEMA_VERSION, level_result, summarize
from .measured_window import WARM_START_LIMIT, MeasuredWindow
from .metrics import derive
from .records import RequestRecord, RequestSpec
from .request import make_client, send
from .runner import resolve_model
from .session_types import SessionSource
from .tokenizer import Tokenizer, load_tokenizer
from .usage_tap import UsageTap

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "WARM_START_LIMIT", "Conversation", "LaneSchedule", "LaneSession",
    "LevelOutcome", "LevelPlan", "MeasuredWindow", "TurnRecord", "flatten", "level_result",
    "run_level", "run_level_sync", "summarize",
]


async def run_level(
    cfg: BenchConfig,
    source: SessionSource,
    plan: LevelPlan,
    affinity: Affinity = NONE,
    *,
    tok: Tokenizer | None = None,
    client: HTTPClient | None = None,
    model: str | None = None,
    on_done: Callable[[bool], None] | None = None,
) -> LevelOutcome:
    """Run ``plan.agents`` closed-loop agents against the server of ``cfg``; return every turn.
    ``on_done(ok)`` after each request (progress)."""
    tok = tok or load_tokenizer(cfg.tokenizer)
    if client is None:
        async with make_client(cfg.timeouts) as own:
            return await run_level(cfg, source, plan, affinity, tok=tok, client=own, model=model,
                                   on_done=on_done)
    model = model or await resolve_model(client, cfg)
    turns: list[TurnRecord] = []
    records: list[RequestRecord] = []
    decided_at: list[float] = []  # per turn: when it was decided to send it
    counter = {"sessions": 0}
    t0 = perf_counter()
    window = MeasuredWindow(t0, plan)
    schedule = LaneSchedule(source, plan.agents, plan.mid_session)

    async def lane(k: int) -> None:
        rng = random.Random(f"{plan.seed}:lane:{k}")
        first_request = True
        for chosen in schedule.lane(k, rng):
            if perf_counter() >= window.stop:
                return
            if plan.replay_once and chosen.index >= len(source):
                return
            session = source.session(chosen.index)
            conv = Conversation(session, tok, plan.salt, chosen.salt())
            start = chosen.start
            conv.skip_to(start, rng)
            counter["sessions"] += 1
            cid = chosen.conversation_id(session)
            run_cfg, headers = _session_settings(cfg, affinity, cid)
            for t in range(start, len(session.turns)):
                turn = session.turns[t]
                # one clock reading decides both whether the turn is sent and whether it is
                # measured: a turn started before the deadline is always measured, even when
                # its request leaves (rec.start) after it — so the result's counts and the
                # recorded turns agree by construction
                decided = perf_counter()
                if decided >= window.stop:
                    return
                if (
                    plan.max_context_tokens
                    and conv.next_len(t) + turn.output_tokens > plan.max_context_tokens
                ):
                    break
                msgs = conv.request(t)
                spec = RequestSpec(
                    index=len(turns),
                    prompt=flatten(msgs),
                    prompt_len=conv.tokens,
                    output_len=turn.output_tokens,
                    messages=msgs,
                    session_id=cid,
                    turn=t,
                    headers=headers,
                )
                body = build_body(run_cfg, model, spec)
                rec = RequestRecord(
                    index=spec.index,
                    prompt_len=spec.prompt_len,
                    output_len_requested=spec.output_len,
                )
                tap = UsageTap(client)
                if first_request and window.opened is None:  # the window opens on it, live
                    rec.on_first_token = window.first_token
                # closed loop: due and released the moment the agent sends (no slot to wait for)
                rec.deadline = rec.dispatched = perf_counter()
                await send(tap, cfg.url, body, rec, cfg.timeouts.total, headers)  # type: ignore[arg-type]
                tr = _turn_record(
                    k,
                    spec,
                    rec,
                    tok,
                    tap,
                    t0,
                    measured=False,  # decided with the window, once every lane has started
                )
                turns.append(tr)
                records.append(rec)
                decided_at.append(decided)
                if on_done is not None:
                    on_done(rec.ok)
                if rec.on_first_token is not None:  # no token was parsed while it streamed
                    rec.on_first_token = None
                    window.first_token(rec.start + tr.ttft if tr.ttft is not None
                                       else perf_counter())
                first_request = False
                if not rec.ok:
                    break  # the conversation cannot go on without its answer
                conv.answer(rec.generated_text)
                delay = min(turn.tool_delay_s / plan.time_scale, window.stop - perf_counter())
                if delay > 0:
                    await asyncio.sleep(delay)

    await asyncio.gather(*(lane(k) for k in range(plan.agents)))
    for tr, decided in zip(turns, decided_at, strict=True):
        tr.measured = window.inside(decided)
    t_end = max(
        (r.end for r, tr in zip(records, turns, strict=True) if tr.measured),
        default=window.stop,
    )
    return LevelOutcome(
        plan,
        model,
        tok.name,
        source.name,
        affinity.describe(),
        turns,
        records,
        window.start,
        t_end,
        counter["sessions"],
    )


def run_level_sync(
    cfg: BenchConfig, source: SessionSource, plan: LevelPlan, affinity: Affinity = NONE
) -> LevelOutcome:
    return eventloop.run(run_level(cfg, source, plan, affinity))


def _session_settings(
    cfg: BenchConfig, affinity: Affinity, cid: str
) -> tuple[BenchConfig, dict[str, str] | None]:
    """Per-conversation config (affinity body field) and headers, built once per session."""
    extra = affinity.extra_body(cid)
    run_cfg = cfg.model_copy(update={"extra_body": {**cfg.extra_body, **extra}}) if extra else cfg
    headers = {**cfg.headers, **(affinity.headers(cid) or {})}
    return run_cfg, headers or None


def _turn_record(
    lane: int,
    spec: RequestSpec,
    rec: RequestRecord,
    tok: Tokenizer,
    tap: UsageTap,
    t0: float,
    measured: bool,
) -> TurnRecord:
    tr = TurnRecord(
        lane=lane,
        conversation_id=spec.session_id or "",
        turn=spec.turn,
        start=rec.start - t0,
        input_tokens=spec.prompt_len,
        input_tokens_server=rec.usage_prompt_tokens,
        cached_tokens=tap.cached_tokens(),
        output_tokens_requested=spec.output_len,
        measured=measured,
        error=rec.error,
        error_detail=rec.error_detail,
    )
    if rec.ok:
        d = derive(rec, tok)
        tr.output_tokens, tr.ttft, tr.e2el = d.output_tokens, d.ttft, d.e2el
        tr.output_speed = d.output_tokens / (d.e2el - d.ttft) if d.e2el > d.ttft else None
    return tr
