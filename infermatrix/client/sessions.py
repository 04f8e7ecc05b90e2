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
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import json
import math
import random
import secrets
import statistics
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from time import perf_counter
from typing import Any

from . import eventloop
from .affinity import NONE, Affinity
from .affinity import parse as parse_affinity
from .backends import build_body
from .config import BenchConfig
from .errors import ClientInputError
from .http import HTTPClient, SinkFactory
from .metrics import compute, derive, per_request_details, percentile
from .progress import Progress
from .records import RequestRecord, RequestSpec
from .request import make_client, send
from .result import build_result
from .runner import resolve_model, run_tokenizer, tokenizer_notes
from .session_sources import (
    Message,
    Session,
    SessionOptions,
    SessionSource,
    load_source,
)
from .sse import SSEParser
from .tokenizer import Tokenizer, load_tokenizer

SCHEMA = "infermatrix-agentic-level"
SCHEMA_VERSION = 1


@dataclass
class LevelPlan:
    agents: int
    duration_s: float = 60.0  # measured window
    warmup_s: float = 0.0  # sent before this is not measured
    mid_session: bool = True
    salt: str = "lvl0"  # cache-bust prefix of every prompt in this level
    seed: int = 0
    max_context_tokens: int | None = None  # a session ends before its context would pass this
    time_scale: float = 1.0  # tool delays are divided by this (a simulated engine run N× faster)
    replay_once: bool = False  # each session runs once, then its lane stops (trace replay)


@dataclass(slots=True)
class TurnRecord:
    """One request of one agent. Times in seconds, ``start`` relative to the level start."""

    lane: int
    conversation_id: str
    turn: int
    start: float
    input_tokens: int  # counted by the client's tokenizer
    input_tokens_server: int | None  # usage.prompt_tokens
    cached_tokens: int | None  # usage.prompt_tokens_details.cached_tokens, when reported
    output_tokens_requested: int
    output_tokens: int | None = None
    ttft: float | None = None
    e2el: float | None = None
    output_speed: float | None = None  # tok/s; None when the answer came in one event
    measured: bool = True
    error: str | None = None
    error_detail: str = ""


@dataclass
class LevelOutcome:
    plan: LevelPlan
    model: str
    tokenizer: str
    source: str
    affinity: str
    turns: list[TurnRecord]
    records: list[RequestRecord]  # the client's records, one per turn, same order
    t_measure: float  # absolute perf_counter: the measured window starts
    t_end: float  # absolute: the last measured request ended
    sessions_started: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def window_s(self) -> float:
        return max(self.t_end - self.t_measure, 1e-9)


# --------------------------------------------------------------------------- conversation


class Conversation:
    """The messages one agent has sent and received so far, with a running token count."""

    def __init__(self, session: Session, tok: Tokenizer, salt: str, reuse_salt: str | None) -> None:
        self.session, self.tok = session, tok
        self.salt, self.reuse_salt = salt, reuse_salt
        self.messages: list[Message] = []
        self.tokens = 0
        self._next: tuple[int, list[Message]] | None = None  # content made by next_len, reused

    def _salted(self, msgs: list[Message], first: bool) -> list[Message]:
        """Level salt at the very start; reuse salt at the start of the first non-system message."""
        out = [dict(m) for m in msgs]
        if first and out:
            out[0]["content"] = f"{self.salt} {out[0].get('content') or ''}"
            if self.reuse_salt:
                i = next((k for k, m in enumerate(out) if m.get("role") != "system"), 0)
                out[i]["content"] = f"{self.reuse_salt} {out[i].get('content') or ''}"
        return out

    def _count(self, msgs: Sequence[Message]) -> int:
        return sum(self.tok.count_many([m.get("content") or "" for m in msgs]))

    def request(self, t: int) -> list[Message]:
        """The messages to send for turn ``t`` (and remember them)."""
        made = (
            self._next[1] if self._next and self._next[0] == t else self.session.turns[t].content()
        )
        self._next = None
        new = self._salted(made, first=not self.messages or self.session.context == "full")
        if self.session.context == "full":
            self.messages, self.tokens = new, self._count(new)
        else:
            self.messages += new
            self.tokens += self._count(new)
        return list(self.messages)

    def answer(self, text: str) -> None:
        if self.session.context == "delta":
            msg = {"role": "assistant", "content": text}
            self.messages.append(msg)
            self.tokens += self._count([msg])

    def skip_to(self, t: int, rng: random.Random) -> None:
        """Start mid-session: turns before ``t`` are in the context, with filler answers of their
        target length (what was really answered is unknown; only the length matters)."""
        for k in range(t):
            self.request(k)
            self.answer(
                self.tok.decode(self.tok.random_ids(rng, self.session.turns[k].output_tokens))
            )

    def next_len(self, t: int) -> int:
        """Tokens of turn ``t``'s request, without sending it (context-limit check)."""
        made = self.session.turns[t].content()
        self._next = (t, made)
        new = self._count(made)
        return new if self.session.context == "full" else self.tokens + new


@dataclass(frozen=True)
class LaneSession:
    """One conversation a lane runs: the source's session ``index`` from turn ``start``.
    ``tag`` tells copies of one session apart (a suffix of the conversation id and a salt after
    the system prompt), so two agents never share a conversation."""

    index: int
    start: int = 0
    tag: str = ""

    def conversation_id(self, session: Session) -> str:
        return f"{session.conversation_id}#{self.tag}" if self.tag else session.conversation_id

    def salt(self) -> str | None:
        return f"r{self.tag}-{self.index}" if self.tag else None


class LaneSchedule:
    """Which conversations each of ``agents`` lanes runs, in order; the client and the virtual
    levels (capacity.virtual) both follow it.

    Lane k runs sessions k, k + agents, k + 2 × agents, … (past the source's end, tagged copies).
    With ``mid_session`` it first joins one conversation already under way: a session drawn in
    proportion to its number of turns, from a random turn, tagged with the lane. That is the
    steady state's mix: a request at a random moment belongs to a session with probability in
    proportion to the requests it makes, so drawing the first session per session (every one
    alike) would make the measured window's contexts as short as a fresh start's."""

    def __init__(self, source: SessionSource, agents: int, mid_session: bool,
                 session: Callable[[int], Session] | None = None) -> None:
        self.source, self.size, self.agents = source, len(source), agents
        self.mid_session = mid_session
        self.session = session or source.session
        self._turns_before: list[int] | None = None  # cumulative turns of sessions 0..size-1

    def _by_turns(self, rng: random.Random) -> int:
        if self._turns_before is None:
            count = getattr(self.source, "turn_count", None) or (
                lambda i: len(self.session(i).turns))
            self._turns_before = list(itertools.accumulate(map(count, range(self.size))))
        return bisect.bisect_right(self._turns_before, rng.random() * self._turns_before[-1])

    def lane(self, k: int, rng: random.Random) -> Iterator[LaneSession]:
        """Lane ``k``'s conversations; ``rng`` is the lane's own (the draws are its first)."""
        if self.mid_session:
            index = self._by_turns(rng)
            yield LaneSession(index, rng.randrange(len(self.session(index).turns)), f"w{k}")
        for use in itertools.count():
            index = k + use * self.agents
            reuse = index // self.size
            yield LaneSession(index, 0, str(reuse) if reuse else "")


def flatten(messages: Sequence[Message]) -> str:
    """A conversation as one completions prompt."""
    return "\n".join(m.get("content") or "" for m in messages)


# --------------------------------------------------------------------------- usage tap


class _UsageTap:
    """Stands in for the HTTP client in ``send`` for one request and keeps references to the
    last few body pieces, so the final usage event's ``prompt_tokens_details.cached_tokens`` can
    be read after the response (the shared record does not carry it). No copy, no parsing on
    the hot path."""

    __slots__ = ("_client", "_tail")

    def __init__(self, client: HTTPClient) -> None:
        self._client = client
        self._tail: deque[bytes] = deque(maxlen=4)

    async def request(
        self,
        method: str,
        url: str,
        body: bytes | None,
        sink_factory: SinkFactory,
        headers: dict[str, str] | None = None,
    ) -> Any:
        tail = self._tail

        def factory(resp: Any) -> Any:
            inner = sink_factory(resp)

            def sink(data: bytes, t: float) -> None:
                tail.append(data)
                inner(data, t)

            return sink

        return await self._client.request(method, url, body, factory, headers)

    def cached_tokens(self) -> int | None:
        parser = SSEParser()
        for event in reversed(parser.feed(b"".join(self._tail)) + parser.flush()):
            try:
                obj = json.loads(event)
            except (ValueError, RecursionError):
                continue
            usage = obj.get("usage") if isinstance(obj, dict) else None
            if isinstance(usage, dict):
                details = usage.get("prompt_tokens_details")
                cached = details.get("cached_tokens") if isinstance(details, dict) else None
                return cached if isinstance(cached, int) and not isinstance(cached, bool) else None
        return None


# --------------------------------------------------------------------------- the level


# the measured window opens at most this many durations after the warm-up, however long the
# lanes' first answers take (each is bounded by the request timeout as well)
WARM_START_LIMIT = 10


class MeasuredWindow:
    """When a level measures: from ``warmup_s`` after its start or, when lanes start
    mid-session, from the moment the last lane's first request has its first token (their cold
    contexts are prefilled: at a few thousand agents that is minutes of prefill), whichever is
    later, but no later than ``WARM_START_LIMIT × duration_s`` after the warm-up; it lasts
    ``duration_s``. Times are absolute (``perf_counter`` or virtual). The client learns each
    first token as its answer streams (a few tokens later, when they are parsed). Until every
    lane has its first token, the start is not known: it is taken as the latest possible, so
    lanes go on sending, and which turns fell inside is decided once it is (``inside``)."""

    def __init__(self, t0: float, plan: LevelPlan) -> None:
        self.earliest = t0 + plan.warmup_s
        self.latest = self.earliest + WARM_START_LIMIT * plan.duration_s
        self.duration = plan.duration_s
        self.waiting = plan.agents if plan.mid_session else 0
        self.last_first_token = -math.inf
        self.opened: float | None = None if self.waiting else self.earliest

    def first_token(self, at: float) -> None:
        """A lane's first request had its first token at ``at`` (or ended without one then):
        called once a lane."""
        if self.waiting <= 0:  # (the window did not wait for first tokens)
            return
        self.waiting -= 1
        self.last_first_token = max(self.last_first_token, at)
        if self.waiting == 0:
            self.opened = min(max(self.earliest, self.last_first_token), self.latest)

    def inside(self, decided: float) -> bool:
        """Whether a turn decided (sent) at ``decided`` is measured."""
        return self.start <= decided < self.stop

    @property
    def start(self) -> float:
        return self.latest if self.opened is None else self.opened

    @property
    def stop(self) -> float:
        return self.start + self.duration


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
                tap = _UsageTap(client)
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
    tap: _UsageTap,
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


# --------------------------------------------------------------------------- summary


def summarize(out: LevelOutcome) -> dict[str, Any]:
    """The level's numbers (only measured turns), JSON-ready."""
    ms = [t for t in out.turns if t.measured]
    ok = [t for t in ms if t.error is None]
    ttft = sorted(t.ttft * 1000.0 for t in ok if t.ttft is not None)
    speed = sorted(t.output_speed for t in ok if t.output_speed is not None)
    e2el = sorted(t.e2el * 1000.0 for t in ok if t.e2el is not None)
    reported = [t for t in ok if t.cached_tokens is not None]
    in_server = sum(t.input_tokens_server or t.input_tokens for t in reported)
    out_tokens = sum(t.output_tokens or 0 for t in ok)
    exact = sum(t.output_tokens == t.output_tokens_requested for t in ok)

    def pct(xs: list[float], p: float) -> float | None:
        return percentile(xs, p) if xs else None

    return {
        "agents": out.plan.agents,
        "window_s": out.window_s,
        "requests": len(ms),
        "completed": len(ok),
        "failed": len(ms) - len(ok),
        "error_rate": (len(ms) - len(ok)) / len(ms) if ms else 0.0,
        "errors": dict(sorted(Counter(t.error for t in ms if t.error).items())),
        "sessions_started": out.sessions_started,
        "unmeasured_requests": len(out.turns) - len(ms),
        "mean_input_tokens": statistics.fmean(t.input_tokens for t in ok) if ok else None,
        "cached_tokens_reported": len(reported),
        "cached_token_ratio": (sum(t.cached_tokens or 0 for t in reported) / in_server)
        if in_server
        else None,
        "output_throughput": out_tokens / out.window_s,
        "exact_output_len": exact,
        "p25_output_speed": pct(speed, 25),
        "median_output_speed": pct(speed, 50),
        "median_ttft_ms": pct(ttft, 50),
        "p95_ttft_ms": pct(ttft, 95),
        "p99_ttft_ms": pct(ttft, 99),
        "median_e2el_ms": pct(e2el, 50),
    }


def level_result(out: LevelOutcome, *, with_turns: bool = False) -> dict[str, Any]:
    """The level's result document (schema ``infermatrix-agentic-level``)."""
    res: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "model_id": out.model,
        "tokenizer_id": out.tokenizer,
        "source": out.source,
        "affinity": out.affinity,
        "plan": asdict(out.plan),
        "max_concurrency": out.plan.agents,
        **summarize(out),
    }
    if with_turns:
        res["turns"] = [asdict(t) for t in out.turns]
    return res


# --------------------------------------------------------------------------- one benchmark run


async def run_multi_turn(cfg: BenchConfig, opts: SessionOptions | None = None) -> dict[str, Any]:
    """``--dataset-name multi-turn``: one closed-loop level of ``max_concurrency`` agents. The
    result is the bench_serving-compatible JSON of the measured requests (same metrics code as
    every other dataset) plus an ``agentic`` block (output speed, cached tokens, sessions).
    ``opts`` defaults to ``cfg.sessions``."""
    opts = opts or cfg.sessions or SessionOptions()
    tok = run_tokenizer(cfg) if cfg.tokenizer or cfg.model else None
    model = None
    if tok is None:  # the tokenizer is the served model's: ask the server first
        async with make_client(cfg.timeouts) as client:
            model = await resolve_model(client, cfg)
        tok = run_tokenizer(cfg, model)
    kind = opts.kind(cfg.dataset_path)
    source = load_source(
        kind,
        tok,
        path=cfg.dataset_path,
        synthetic=opts.synthetic,
        block_size=cfg.trace_block_size,
        tool_delay_s=opts.tool_delay_s,
        seed=cfg.seed,
    )
    if opts.output == "exact" and not cfg.ignore_eos:
        cfg = cfg.model_copy(update={"ignore_eos": True})
    plan = LevelPlan(
        agents=cfg.max_concurrency or 1,
        duration_s=opts.duration_s,
        warmup_s=opts.warmup_s,
        mid_session=opts.mid_session and not opts.replay_once,  # once = from turn 0
        salt=f"x{secrets.token_hex(3)}",
        seed=cfg.seed,
        max_context_tokens=opts.max_context_tokens,
        replay_once=opts.replay_once,
        time_scale=opts.time_scale,
    )
    # the window's seconds (warm-up + measured); a replay runs until its sessions end instead
    progress = Progress(math.ceil(plan.warmup_s + plan.duration_s),
                        enabled=not (cfg.disable_tqdm or opts.replay_once), by_time=True)
    progress.start(perf_counter())
    try:
        out = await run_level(cfg, source, plan, parse_affinity(opts.affinity), tok=tok,
                              model=model, on_done=progress.done)
    finally:
        progress.close()
    measured = [r for r, t in zip(out.records, out.turns, strict=True) if t.measured]
    if not measured:
        raise ClientInputError(
            "no request was measured: lengthen the session duration or shorten the warm-up"
        )
    metrics = compute(
        measured,
        out.t_measure,
        out.t_end,
        tok,
        cfg.metric_percentiles,
        cfg.percentile_metrics,
        cfg.goodput,
    )
    details = per_request_details(measured, tok) if cfg.save_detailed else None
    result = build_result(
        cfg.model_copy(update={"max_concurrency": plan.agents}),  # the agents: never unset
        out.model,
        tok.name,
        metrics,
        details,
        notes=tokenizer_notes(tok),
        window=(out.t_measure, out.t_end),
    )
    result["agentic"] = level_result(out, with_turns=cfg.save_detailed)
    return result


def run_multi_turn_sync(cfg: BenchConfig, opts: SessionOptions | None = None) -> dict[str, Any]:
    return eventloop.run(run_multi_turn(cfg, opts))


def format_agentic(result: dict[str, Any]) -> str:
    """The agentic block of a multi-turn result, as lines under the bench summary."""
    a = result.get("agentic") or {}

    def num(v: Any, fmt: str = ".2f") -> str:
        return "n/a" if v is None else format(v, fmt)

    rows = [
        ("Agents / sessions started:", f"{a.get('agents')} / {a.get('sessions_started')}"),
        ("Affinity:", a.get("affinity")),
        (
            "P25 / median output speed (tok/s):",
            f"{num(a.get('p25_output_speed'))} / {num(a.get('median_output_speed'))}",
        ),
        ("P95 TTFT (ms):", num(a.get("p95_ttft_ms"))),
        ("Mean input tokens:", num(a.get("mean_input_tokens"), ".0f")),
        ("Cached token ratio:", num(a.get("cached_token_ratio"), ".3f")),
        ("Exact output lengths:", f"{a.get('exact_output_len')} / {a.get('completed')}"),
    ]
    return "\n".join([f"{' Agentic sessions ':-^60}", *(f"{k:<42}{v}" for k, v in rows), "=" * 60])
