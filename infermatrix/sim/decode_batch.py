"""A large running batch of quiet decoders as arrays: one numpy pass per step, not one Python
pass per sequence.

Under a closed loop of many agents (the capacity searches) new work reaches a decode instance
at nearly every step, so the decode phases of the engine are cut after one step and each step
would walk its whole batch twice (schedule, then finish) — a thousand sequences or more. While
every running sequence of an instance is a decoder that nobody streams (``Seq.quiet``: no
token times, no update callback), their counters live here instead, aligned with
``EngineCore.running``: tokens computed, tokens output, draft credit and blocks held. The
sequences' own fields are stale meanwhile and are written back whenever something else must
read them (``EngineCore.leave_batch``): a phase, an abort, a preemption, a sequence that is not
a decoder, a token budget too small for the batch. A step applied over these arrays
(decode_batch_steps.py) gives exactly what ``EngineCore.schedule`` and ``EngineCore.finish``
give one sequence at a time (same blocks in the same order, same float operations on the
credit, same order of sinks); a step that would preempt is left to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .seq import Seq

# Below this many running sequences the Python pass is as fast as building arrays.
MIN_SEQS = 128


def is_quiet_decoder(seq: Seq) -> bool:
    """Emits its next token in its next step (its context is computed but for that token),
    has emitted its first already, and nobody watches its tokens stream."""
    return (seq.quiet and not seq.aborted and seq.num_output > 0 and seq.first_at >= 0
            and seq.num_computed == seq.prompt_len + seq.num_output - 1)


class DecodeBatch:
    """The counters of ``seqs`` (the instance's running list, in its order) as arrays."""

    def __init__(self, seqs: Sequence[Seq]):
        n = len(seqs)
        self.computed = np.fromiter((s.num_computed for s in seqs), np.int64, n)
        self.output = np.fromiter((s.num_output for s in seqs), np.int64, n)
        self.max_tokens = np.fromiter((s.max_tokens for s in seqs), np.int64, n)
        self.credit = np.fromiter((s.credit for s in seqs), np.float64, n)
        self.blocks = np.fromiter((len(s.blocks) for s in seqs), np.int64, n)
        self.rank = np.fromiter((s.rank for s in seqs), np.int64, n)
        # sequences with prompt blocks still to share (the newly admitted): positions
        self.uncommitted = [i for i, s in enumerate(seqs) if s.committed < len(s.hashes)]

    def __len__(self) -> int:
        return len(self.computed)

    def extend(self, seqs: Sequence[Seq]) -> None:
        """Decoders admitted behind the others (a few a step: copying the arrays is cheap)."""
        n = len(self)
        self.uncommitted += [n + i for i, s in enumerate(seqs) if s.committed < len(s.hashes)]
        self.computed = np.append(self.computed, [s.num_computed for s in seqs])
        self.output = np.append(self.output, [s.num_output for s in seqs])
        self.max_tokens = np.append(self.max_tokens, [s.max_tokens for s in seqs])
        self.credit = np.append(self.credit, [s.credit for s in seqs])
        self.blocks = np.append(self.blocks, [len(s.blocks) for s in seqs])
        self.rank = np.append(self.rank, [s.rank for s in seqs])

    def keep(self, mask: np.ndarray) -> None:
        """Drop the sequences where ``mask`` is False (they finished)."""
        if self.uncommitted:
            index = np.cumsum(mask) - 1
            self.uncommitted = [int(index[i]) for i in self.uncommitted if mask[i]]
        self.computed = self.computed[mask]
        self.output = self.output[mask]
        self.max_tokens = self.max_tokens[mask]
        self.credit = self.credit[mask]
        self.blocks = self.blocks[mask]
        self.rank = self.rank[mask]

    def write_back(self, seqs: Sequence[Seq], at: Sequence[int] | None = None) -> None:
        """Bring the sequences' own counters up to date (all, or those at positions ``at``)."""
        positions = range(len(seqs)) if at is None else at
        computed, output, credit = self.computed, self.output, self.credit
        for i in positions:
            seq = seqs[i]
            seq.num_computed = int(computed[i])
            seq.num_output = int(output[i])
            seq.credit = float(credit[i])
