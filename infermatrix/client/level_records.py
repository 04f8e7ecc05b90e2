"""A closed-loop level's plan and what it records: each turn, and the outcome of the
whole level (client/sessions.py runs it, capacity/virtual.py simulates it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .records import RequestRecord


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
