"""One scheduled step: its entries (sequence, tokens computed, draft tokens) and the batch
shape the step model times, summed as the scheduler builds the step; under attention data
parallelism, the shape of the busiest rank, whose batch times a step that prefills."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .batch_shape import BatchShape
from .seq import Seq


class Step:
    """One step: its entries (sequence, tokens computed, draft tokens), its shape, and whether
    every sequence decodes (one token, plus drafts: no prefill chunk). A step scheduled over a
    DecodeBatch holds its decoders as a list and makes their entries only if asked."""

    __slots__ = ("_entries", "shape", "pure_decode", "batched", "_decoders", "_draft")

    def __init__(self, entries: list[tuple[Seq, int, int]], shape: BatchShape, pure_decode: bool,
                 *, decoders: list[Seq] | None = None, draft: int = 0):
        self._entries = entries  # after the decoders, if any
        self.shape = shape
        self.pure_decode = pure_decode
        self.batched = decoders is not None
        self._decoders = decoders
        self._draft = draft

    @property
    def entries(self) -> list[tuple[Seq, int, int]]:
        if self._decoders is not None:
            self._entries = [(seq, 1, self._draft) for seq in self._decoders] + self._entries
            self._decoders = None
        return self._entries


def busiest_rank(ranks: int, entries: Sequence[tuple[Seq, int, int]],
                 held: np.ndarray | None = None) -> BatchShape:
    """The aggregates of the attention-DP rank with the most new tokens (then the most KV
    read): of ``entries`` (sequence, tokens computed, drafts), plus under a DecodeBatch
    ``held`` (tokens, sequences, KV read, attention pairs, drafts by rank: its decoders')."""
    loads = np.zeros((5, ranks)) if held is None else held
    if entries:  # (one list per column: faster than transposing with zip(*entries))
        rank = np.array([seq.rank for seq, _, _ in entries])
        done = np.array([seq.num_computed for seq, _, _ in entries], np.float64)
        n = np.array([n for _, n, _ in entries], np.float64)
        drafts = np.array([draft for _, _, draft in entries], np.float64)
        for i, w in enumerate((n, None, done + n, n * done + n * (n + 1) / 2, drafts)):
            loads[i] += np.bincount(rank, weights=w, minlength=ranks)
    tokens, count, kv, pairs, drafts = loads.tolist()
    top = max(range(ranks), key=lambda r: (tokens[r] + drafts[r], kv[r]))
    return BatchShape(int(tokens[top]), int(count[top]), int(kv[top]), pairs[top],
                      int(drafts[top]))


def shape_sums(entries: Sequence[tuple[Seq, int, int]], tokens: int, drafts: int, kv_read: int,
               pairs: float, pure: bool) -> tuple[int, int, int, float, bool]:
    """A step's shape sums (tokens, drafts, KV read, attention pairs, all decoding) with
    ``entries`` (sequence, tokens computed, drafts) added, in their order."""
    for seq, n, draft in entries:
        done = seq.num_computed
        tokens += n
        drafts += draft
        kv_read += done + n
        pairs += n * done + n * (n + 1) / 2
        if n != 1 or done + 1 != seq.prompt_len + seq.num_output:
            pure = False
    return tokens, drafts, kv_read, pairs, pure
