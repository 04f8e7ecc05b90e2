"""Where agent sessions come from: a synthetic generator (synthetic_sessions.py), a recorded
trace set (trace_sessions.py: manifest + per-task JSONL of turns), or a Mooncake-style JSONL
trace (mooncake_sessions.py). This module holds the run's session options and loads the
source they name; a session itself is in session_types.py. Every name is re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .distributions import Dist
from .errors import ClientInputError
from .mooncake_sessions import MooncakeSource
from .session_types import ContextMode, Message, Session, SessionSource, Turn
from .synthetic_sessions import SyntheticSource, SyntheticSpec, parse_synthetic
from .tokenizer import Tokenizer
from .trace_sessions import MANIFEST_FORMAT, TraceSource

__all__ = [
    "MANIFEST_FORMAT", "ContextMode", "Dist", "Message", "MooncakeSource", "Session",
    "SessionOptions", "SessionSource", "SourceKind", "SyntheticSource", "SyntheticSpec",
    "TraceSource", "Turn", "load_source", "parse_synthetic",
]


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
