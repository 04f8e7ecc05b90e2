"""Synthetic coding-agent sessions: the spec (``NAME=DIST`` items or the catalog's
distributions) and the source that draws sessions from it on demand."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .distributions import Dist
from .errors import ClientInputError
from .prompts import exact_ids
from .session_types import Message, Session, Turn
from .tokenizer import Tokenizer

_CHUNK = 1024  # system-prompt ids are drawn in chunks so the prompt does not depend on call order


class SyntheticSpec(BaseModel):
    """Synthetic coding-agent sessions. Defaults follow the published AA-AgentPerf shape at a
    smaller scale (output median ~150 tokens, tool delay median ~1 s, a long shared system
    prompt, context growing turn by turn)."""

    model_config = ConfigDict(extra="forbid")

    sessions: int = Field(256, ge=1, description="distinct sessions; agents cycle through them")
    turns: Dist = Dist(kind="uniform", low=4, high=40)
    system_prompt_tokens: Dist = Dist(kind="constant", value=4000)
    user_tokens: Dist = Dist(kind="lognormal", median=800, sigma=1.0, min=16, max=8000)
    output_tokens: Dist = Dist(kind="lognormal", median=150, sigma=1.2, min=4, max=2000)
    tool_delay_s: Dist = Dist(kind="lognormal", median=1.0, sigma=0.5, max=10)
    seed: int = 0


class SyntheticSource:
    """Every session starts with a prefix of one shared system prompt (the length is drawn per
    session), then user turns of fresh content: reuse comes from the system prompt across
    agents and from the conversation itself across turns."""

    def __init__(self, spec: SyntheticSpec, tok: Tokenizer) -> None:
        self.spec = spec
        self.tok = tok
        self.name = f"synthetic(seed={spec.seed})"
        self._system_ids: list[int] = []

    def __len__(self) -> int:
        return self.spec.sessions

    def _system(self, n: int) -> str:
        while len(self._system_ids) < n:  # grow the one shared prompt in fixed, seeded chunks
            rng = random.Random(f"{self.spec.seed}:system:{len(self._system_ids) // _CHUNK}")
            self._system_ids += self.tok.random_ids(rng, _CHUNK)
        text, _ = exact_ids(
            self.tok, random.Random(f"{self.spec.seed}:system-tail"), n, head=self._system_ids[:n]
        )
        return text

    def turn_count(self, index: int) -> int:
        """``len(self.session(index).turns)``, without drawing the turns (its first draw)."""
        return self.spec.turns.sample_int(random.Random(f"{self.spec.seed}:session:{index}"),
                                          at_least=1)

    def session(self, index: int) -> Session:
        s = self.spec
        rng = random.Random(f"{s.seed}:session:{index}")
        n_turns = s.turns.sample_int(rng, at_least=1)
        sys_len = s.system_prompt_tokens.sample_int(rng)
        turns = []
        for t in range(n_turns):
            user_len = s.user_tokens.sample_int(rng, at_least=1)
            out = s.output_tokens.sample_int(rng, at_least=1)
            delay = max(0.0, s.tool_delay_s.sample(rng))
            system = sys_len if t == 0 else 0
            turns.append(
                Turn(out, delay, make=self._maker(index, t, user_len, system),
                     tokens=user_len + system)
            )
        return Session(f"syn-{s.seed}-{index}", turns, "delta", {"system_prompt_tokens": sys_len})

    def _maker(
        self, index: int, turn: int, user_len: int, sys_len: int
    ) -> Callable[[], list[Message]]:
        def make() -> list[Message]:
            rng = random.Random(f"{self.spec.seed}:content:{index}:{turn}")
            text, _ = exact_ids(self.tok, rng, user_len)
            msgs: list[Message] = (
                [{"role": "system", "content": self._system(sys_len)}] if sys_len else []
            )
            return [*msgs, {"role": "user", "content": text}]

        return make


def parse_synthetic(items: Sequence[str], seed: int = 0) -> SyntheticSpec:
    """``NAME=DIST`` items (``turns=uniform:low=2,high=8``, ``sessions=64``) → spec."""
    fields: dict[str, Any] = {"seed": seed}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not eq:
            raise ClientInputError(f"expected NAME=VALUE, got {item!r}")
        try:
            fields[name] = int(value) if name == "sessions" else Dist.parse(value)
        except (ValueError, ValidationError) as e:
            raise ClientInputError(f"{name}: {_first_error(e)}") from None
    try:
        return SyntheticSpec.model_validate(fields)
    except ValidationError as e:
        raise ClientInputError(f"synthetic sessions: {_first_error(e)}") from None


def _first_error(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        return re.sub(r"^Value error, ", "", f"{loc + ': ' if loc else ''}{err['msg']}")
    return str(e)
