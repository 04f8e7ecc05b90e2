"""A Mooncake-style JSONL trace (one request per line, hash ids for shared blocks)
replayed as sessions."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import ClientInputError
from .jsonl import read_jsonl
from .prompts import exact_ids
from .session_types import Message, Session, StoredSessions, Turn
from .tokenizer import Tokenizer


class MooncakeSource(StoredSessions):
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
