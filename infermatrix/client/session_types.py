"""What an agent session is: its turns, and the protocol of a source of sessions
(session_sources.py loads one: synthetic, a recorded trace set or a Mooncake trace).

A session is a list of turns. Each turn says what it adds to the conversation (``messages``),
how many tokens the answer must have (exact: the runner sends ``ignore_eos`` + ``max_tokens``)
and how long the agent "runs tools" after the answer before the next turn.

Two context modes:

- ``delta`` (synthetic, the default for traces): a turn's messages are what it appends; the
  runner sends the whole conversation so far, including the answers it actually received.
- ``full`` (Mooncake, or a trace that records every request in full): a turn's messages are the
  whole request, replayed verbatim; answers are not inserted.

Content is made on demand (per turn, from seeded RNGs), so sessions cost memory only while an
agent runs them and a run is reproducible from its seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Message = dict[str, str]
ContextMode = Literal["delta", "full"]


@dataclass(slots=True)
class Turn:
    output_tokens: int  # exact answer length to ask for
    tool_delay_s: float = 0.0  # after the answer, before the next turn
    messages: list[Message] | None = None  # stored content (replayed traces)
    make: Callable[[], list[Message]] | None = None  # content built on demand (synthetic, Mooncake)
    tokens: int | None = None  # tokens of content() when known without building it
    block_ids: tuple[int, ...] = ()  # Mooncake: the shared blocks content() starts with

    def content(self) -> list[Message]:
        if self.messages is not None:
            return self.messages
        assert self.make is not None
        return self.make()


@dataclass(slots=True)
class Session:
    conversation_id: str
    turns: list[Turn]
    context: ContextMode = "delta"
    meta: dict[str, Any] = field(default_factory=dict)


class SessionSource(Protocol):
    """A finite, indexable set of sessions; agents cycle through it."""

    name: str

    def __len__(self) -> int: ...

    def session(self, index: int) -> Session: ...


class StoredSessions:
    """A source whose sessions are all read up front (the recorded and Mooncake traces):
    ``sessions`` is set by the subclass, agents cycle through it."""

    name: str
    sessions: list[Session]

    def __len__(self) -> int:
        return len(self.sessions)

    def session(self, index: int) -> Session:
        return self.sessions[index % len(self.sessions)]
