"""The two records every workload shares: what to send (RequestSpec) and what happened
(RequestRecord). Closed-loop sessions (multi-turn) reuse both: a turn is a RequestSpec with
``session_id``/``turn`` set and ``messages`` holding the conversation so far."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class RequestSpec:
    index: int
    prompt: str  # text prompt (completions) or the last user message (chat)
    prompt_len: int  # measured with the run's tokenizer, not the target
    output_len: int  # max_tokens to ask for
    deadline: float = 0.0  # seconds after the benchmark start (open-loop arrival)
    messages: list[dict[str, str]] | None = None  # full conversation, when not just `prompt`
    session_id: str | None = None  # multi-turn seam: conversation id
    turn: int = 0
    headers: dict[str, str] | None = None  # per-request headers (e.g. router affinity)


@dataclass(slots=True)
class RequestRecord:
    """Timestamps are absolute ``time.perf_counter()`` values."""

    index: int
    prompt_len: int
    output_len_requested: int
    deadline: float = 0.0  # when it was due
    dispatched: float = 0.0  # when the scheduler released it (deadline + schedule lag)
    start: float = 0.0  # sent, after its concurrency slot was acquired
    end: float = 0.0  # response closed (or failed)
    event_times: list[float] = field(default_factory=list)  # text-carrying events only
    event_texts: list[str] = field(default_factory=list)
    usage_completion_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    http_status: int | None = None
    error: str | None = None  # kind: http_404, timeout_idle, disconnect, empty_output, ...
    error_detail: str = ""
    response_id: str | None = None
    done_seen: bool = False  # the stream ended with [DONE]
    bad_events: int = 0  # malformed events (not UTF-8 or not JSON): the request failed
    # called once with the first token's stamp when it is parsed, while the answer streams
    on_first_token: Callable[[float], None] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def generated_text(self) -> str:
        return "".join(self.event_texts)


@dataclass
class Prepared:
    """One request ready to go: its JSON body is serialised before the clock starts (the runner
    makes them, the workers send them)."""

    spec: RequestSpec
    body: bytes
