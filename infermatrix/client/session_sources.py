"""Where agent sessions come from: a synthetic generator, a recorded trace set (manifest +
per-task JSONL of turns), or a Mooncake-style JSONL trace.

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

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from .errors import ClientInputError
from .files import read_json
from .jsonl import read_jsonl
from .prompts import exact_ids
from .tokenizer import Tokenizer

Message = dict[str, str]
ContextMode = Literal["delta", "full"]
MANIFEST_FORMAT = "infermatrix-agentic-trace"
_CHUNK = 1024  # system-prompt ids are drawn in chunks so the prompt does not depend on call order


# --------------------------------------------------------------------------- sessions


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


# --------------------------------------------------------------------------- distributions


class Dist(BaseModel):
    """A distribution of one quantity. Integer quantities round the draw.

    constant: ``value``; uniform: ``low``..``high``; lognormal: ``median`` and ``sigma`` (of the
    underlying normal); zipf: P(k) ∝ k^-a over ``low``..``high`` (default low 1). ``min`` / ``max``
    clamp any draw. Written in a flag as ``lognormal:median=150,sigma=1.2,max=2000`` or ``5``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["constant", "uniform", "lognormal", "zipf"] = "constant"
    value: float | None = None
    low: float | None = None
    high: float | None = None
    median: float | None = Field(None, gt=0)
    sigma: float = Field(1.0, ge=0)
    a: float = Field(1.2, gt=0)
    min: float | None = None
    max: float | None = None
    _zipf_cum: list[float] | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _complete(self) -> Dist:
        need = {
            "constant": ("value",),
            "uniform": ("low", "high"),
            "lognormal": ("median",),
            "zipf": ("high",),
        }[self.kind]
        missing = [n for n in need if getattr(self, n) is None]
        if missing:
            raise ValueError(f"a {self.kind} distribution needs {', '.join(missing)}")
        low = self.low if self.low is not None else 1.0
        if self.kind in ("uniform", "zipf") and low > self.high:  # type: ignore[operator]
            raise ValueError("low must not exceed high")
        return self

    @classmethod
    def parse(cls, text: str | float | int | dict[str, Any] | Dist) -> Dist:
        """From a number, a dict, or ``kind:key=value,...``."""
        if isinstance(text, Dist):
            return text
        if isinstance(text, int | float):
            return cls(kind="constant", value=float(text))
        if isinstance(text, dict):
            return cls.model_validate(text)
        text = text.strip()
        try:
            return cls(kind="constant", value=float(text))
        except ValueError:
            pass
        kind, _, rest = text.partition(":")
        args: dict[str, Any] = {"kind": kind.strip()}
        for part in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, val = part.partition("=")
            if not eq:
                raise ValueError(f"expected key=value in {text!r}, got {part!r}")
            args[key.strip()] = float(val)
        return cls.model_validate(args)

    def sample(self, rng: random.Random) -> float:
        if self.kind == "constant":
            x = float(self.value)  # type: ignore[arg-type]
        elif self.kind == "uniform":
            x = rng.uniform(self.low, self.high)  # type: ignore[arg-type]
        elif self.kind == "lognormal":
            x = float(self.median) * math.exp(rng.gauss(0.0, self.sigma))  # type: ignore[arg-type]
        else:
            lo = int(self.low or 1)
            if self._zipf_cum is None:
                total, cum = 0.0, []
                for k in range(lo, int(self.high) + 1):  # type: ignore[arg-type]
                    total += k**-self.a
                    cum.append(total)
                self._zipf_cum = cum
            x = float(lo + rng.choices(range(len(self._zipf_cum)), cum_weights=self._zipf_cum)[0])
        if self.min is not None:
            x = max(self.min, x)
        if self.max is not None:
            x = min(self.max, x)
        return x

    def sample_int(self, rng: random.Random, at_least: int = 0) -> int:
        return max(at_least, round(self.sample(rng)))


# --------------------------------------------------------------------------- synthetic


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


# --------------------------------------------------------------------------- recorded traces


class TraceSource:
    """A manifest (JSON) naming per-task JSONL files of turns::

        {"format": "infermatrix-agentic-trace", "version": 1, "context": "delta",
         "tasks": [{"id": "task-000", "file": "tasks/task-000.jsonl"}, ...]}

    Each line is one turn: ``conversation_id``, ``turn`` (optional, sorts), OpenAI ``messages``,
    ``target_output_tokens`` (also ``output_tokens`` / ``max_tokens``) and
    ``simulated_tool_delay_ms_after``. A file may hold several conversations."""

    def __init__(self, manifest: str | Path) -> None:
        self.path = Path(manifest).expanduser()
        self.name = f"trace({self.path})"
        data = read_json(self.path)
        if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
            raise ClientInputError(f"{self.path}: a manifest is a JSON object with a 'tasks' list")
        context = data.get("context", "delta")
        if context not in ("delta", "full"):
            raise ClientInputError(
                f"{self.path}: context must be 'delta' or 'full', not {context!r}"
            )
        self.sessions: list[Session] = []
        for i, task in enumerate(data["tasks"]):
            file = task.get("file") if isinstance(task, dict) else task
            if not isinstance(file, str):
                raise ClientInputError(f"{self.path}: tasks[{i}] needs a 'file'")
            self.sessions += _read_turns(self.path.parent / file, context)
        if not self.sessions:
            raise ClientInputError(f"{self.path}: the trace set has no turns")

    def __len__(self) -> int:
        return len(self.sessions)

    def session(self, index: int) -> Session:
        return self.sessions[index % len(self.sessions)]


def _read_turns(path: Path, context: ContextMode) -> list[Session]:
    convs: dict[str, list[tuple[int, int, Turn]]] = {}
    for lineno, row in read_jsonl(path):
        try:
            cid = str(row["conversation_id"])
            msgs = row["messages"]
            out = row.get("target_output_tokens", row.get("output_tokens", row.get("max_tokens")))
            delay_ms = float(row.get("simulated_tool_delay_ms_after") or 0.0)
            order = int(row.get("turn", lineno))
        except (KeyError, TypeError, ValueError) as e:
            raise ClientInputError(f"{path}:{lineno}: bad turn ({e!r})") from e
        if not isinstance(msgs, list) or not all(isinstance(m, dict) and "role" in m for m in msgs):
            raise ClientInputError(f"{path}:{lineno}: 'messages' must be a list of OpenAI messages")
        if not isinstance(out, int) or out < 1:
            raise ClientInputError(
                f"{path}:{lineno}: target_output_tokens must be a positive integer"
            )
        convs.setdefault(cid, []).append(
            (order, lineno, Turn(out, delay_ms / 1000.0, messages=msgs))
        )
    return [
        Session(
            cid, [t for _, _, t in sorted(rows, key=lambda r: r[:2])], context, {"file": str(path)}
        )
        for cid, rows in convs.items()
    ]


# --------------------------------------------------------------------------- Mooncake


class MooncakeSource:
    """Mooncake JSONL ``{timestamp, input_length, output_length, hash_ids}``, one request per
    line, replayed as sessions in ``full`` context mode.

    A hash id stands for one block of ``block_size`` tokens whose content depends only on
    (seed, id), so shared ids are shared prefixes. Rows are grouped into sessions by a
    ``conversation_id`` / ``session_id`` / ``chat_id`` field when present, otherwise a row
    continues the session whose previous request's full blocks are a prefix of its own. The
    trace records arrival times, not tool time: ``tool_delay_s`` is used between turns."""

    def __init__(
        self,
        path: str | Path,
        tok: Tokenizer,
        *,
        block_size: int = 512,
        tool_delay_s: float = 1.0,
        seed: int = 0,
    ) -> None:
        self.path = Path(path).expanduser()
        self.name = f"mooncake({self.path})"
        self.tok, self.bs, self.seed = tok, block_size, seed
        self._blocks: dict[int, list[int]] = {}
        groups: list[list[tuple[int, int, int, list[int]]]] = []
        by_id: dict[str, int] = {}
        open_tails: dict[
            tuple[int, ...], int
        ] = {}  # full-block ids of a session's last row → group
        for lineno, row in read_jsonl(self.path):
            try:
                isl, osl = int(row["input_length"]), int(row["output_length"])
                ids = [int(h) for h in row.get("hash_ids", [])]
            except (KeyError, TypeError, ValueError) as e:
                raise ClientInputError(f"{self.path}:{lineno}: bad trace row ({e!r})") from e
            if isl < 1 or osl < 1:
                raise ClientInputError(
                    f"{self.path}:{lineno}: input_length and output_length must be >= 1"
                )
            key = next(
                (str(row[k]) for k in ("conversation_id", "session_id", "chat_id") if k in row),
                None,
            )
            g = by_id.get(key) if key is not None else _continues(ids, open_tails)
            if g is None:
                g = len(groups)
                groups.append([])
                if key is not None:
                    by_id[key] = g
            groups[g].append((lineno, isl, osl, ids))
            full = tuple(ids[: isl // block_size])
            if full:
                open_tails[full] = g
        self.sessions = [
            Session(
                f"mc-{i}",
                [
                    Turn(osl, tool_delay_s, make=self._maker(lineno, isl, ids), tokens=isl,
                         block_ids=tuple(ids))
                    for lineno, isl, osl, ids in rows
                ],
                "full",
            )
            for i, rows in enumerate(groups)
        ]
        if not self.sessions:
            raise ClientInputError(f"{self.path}: the trace has no requests")

    def __len__(self) -> int:
        return len(self.sessions)

    def session(self, index: int) -> Session:
        return self.sessions[index % len(self.sessions)]

    def _maker(self, lineno: int, isl: int, hash_ids: Sequence[int]) -> Callable[[], list[Message]]:
        def make() -> list[Message]:
            ids: list[int] = []
            for h in hash_ids:
                if len(ids) >= isl:
                    break
                if h not in self._blocks:
                    self._blocks[h] = self.tok.random_ids(
                        random.Random(f"{self.seed}:block:{h}"), self.bs
                    )
                ids += self._blocks[h]
            text, _ = exact_ids(
                self.tok, random.Random(f"{self.seed}:tail:{lineno}"), isl, head=ids[:isl]
            )
            return [{"role": "user", "content": text}]

        return make


def _continues(ids: list[int], open_tails: dict[tuple[int, ...], int]) -> int | None:
    """The group whose last row's full blocks are the longest prefix of ``ids``."""
    for n in range(len(ids), 0, -1):
        g = open_tails.get(tuple(ids[:n]))
        if g is not None:
            return g
    return None


# --------------------------------------------------------------------------- loading


class SessionOptions(BaseModel):
    """The multi-turn knobs of a benchmark run (``--dataset-name multi-turn``); the number of
    agents is ``max_concurrency``. A field of BenchConfig, like its timeouts."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["auto", "synthetic", "trace", "mooncake"] = Field(
        "auto",
        description="auto: synthetic without --dataset-path, a .json manifest → trace, "
        "else Mooncake JSONL",
    )
    synthetic: list[str] = Field(
        default_factory=list, description="NAME=DIST items (parse_synthetic)"
    )
    affinity: str = Field(
        "none", description="how the conversation id reaches the router (affinity.py)"
    )
    duration_s: float = Field(60.0, gt=0, description="measured seconds")
    warmup_s: float = Field(0.0, ge=0, description="unmeasured seconds first")
    mid_session: bool = True
    output: Literal["exact", "natural"] = Field(
        "exact", description="exact: ignore_eos + max_tokens = the turn's target (the AA policy)"
    )
    replay_once: bool = Field(
        False, description="every session once from turn 0, then stop (trace replay)"
    )
    tool_delay_s: float = Field(1.0, ge=0, description="Mooncake: seconds between turns")
    max_context_tokens: int | None = Field(None, ge=1)
    time_scale: float = Field(
        1.0, gt=0, description="tool delays are divided by this (a simulated engine run N× faster)"
    )

    def kind(self, dataset_path: str | None) -> SourceKind:
        if self.source != "auto":
            return self.source
        if not dataset_path:
            return "synthetic"
        return "trace" if dataset_path.endswith(".json") else "mooncake"


SourceKind = Literal["synthetic", "trace", "mooncake"]


def load_source(
    kind: SourceKind,
    tok: Tokenizer,
    *,
    path: str | None = None,
    synthetic: Sequence[str] = (),
    block_size: int = 512,
    tool_delay_s: float = 1.0,
    seed: int = 0,
) -> SessionSource:
    """One entry point for the CLI and the capacity search. ``synthetic``: the ``NAME=DIST``
    items of a synthetic source (see ``parse_synthetic``)."""
    if kind == "synthetic":
        return SyntheticSource(parse_synthetic(synthetic, seed), tok)
    if not path:
        raise ClientInputError(f"a {kind} session source needs a path")
    if kind == "trace":
        return TraceSource(path)
    if kind == "mooncake":
        return MooncakeSource(
            path, tok, block_size=block_size, tool_delay_s=tool_delay_s, seed=seed
        )
    raise ClientInputError(f"unknown session source {kind!r}")


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

