"""One agent's conversation: the messages sent and received so far, salted against
reuse across levels and sessions, with a running token count."""

from __future__ import annotations

import random
from collections.abc import Sequence

from .session_types import Message, Session
from .tokenizer import Tokenizer


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



def flatten(messages: Sequence[Message]) -> str:
    """A conversation as one completions prompt."""
    return "\n".join(m.get("content") or "" for m in messages)
