"""Steps scheduled and applied over a DecodeBatch (decode_batch.py): while every running
sequence of an instance is a quiet decoder and there are at least MIN_SEQS of them, a step is
one numpy pass over their counters instead of one Python pass per sequence, with exactly the
blocks, tokens, float operations and order of sinks that one sequence at a time gives. A step
that would not give every decoder its token, or would preempt, leaves the batch: the
scheduler (scheduler.py) makes it one sequence at a time.
"""

from __future__ import annotations

from itertools import compress

import numpy as np

from .admission import Admission
from .batch_shape import BatchShape
from .config import SimConfig
from .decode_batch import MIN_SEQS, DecodeBatch, is_quiet_decoder
from .perf import PerfModel
from .seq import Seq
from .step import Step, busiest_rank, shape_sums


class DecodeBatchSteps(Admission):
    """Admission with steps over the running decoders as arrays."""

    def __init__(self, cfg: SimConfig, perf: PerfModel | None = None):
        super().__init__(cfg, perf)
        self._batch: DecodeBatch | None = None  # the running decoders as arrays (decode_batch)

    def leave_batch(self) -> None:
        """Back to one sequence at a time: the sequences' own counters brought up to date."""
        if self._batch is not None:
            self._batch.write_back(self.running)
            self._batch = None

    def _batch_step(self) -> Step | None:
        """The step over the DecodeBatch, entered when every running sequence is a quiet
        decoder and there are at least MIN_SEQS of them; None when there is none."""
        running = self.running
        if (self._batch is None and len(running) >= MIN_SEQS
                and all(map(is_quiet_decoder, running))):
            self._batch = DecodeBatch(running)
        if self._batch is not None:
            return self._schedule_batch()
        return None

    def _schedule_batch(self) -> Step | None:
        """schedule() over the DecodeBatch, or None after leaving it (a step that would not
        give every decoder its token, or would preempt, is schedule()'s to make)."""
        b = self._batch
        assert b is not None
        running, pools, spec = self.running, self.pools, self.draft
        m = len(running)
        budget = self.step_tokens
        if m > budget:
            self.leave_batch()
            return None
        rank_left = self._rank_budgets()
        if (rank_left is not None and self.rank_decodes
                and (self.waiting or self.rank_max_seqs > self.rank_chunk)):
            # every decoder takes a token of its rank's budget
            rank_left = [
                left - held for left, held in zip(
                    rank_left, np.bincount(b.rank, minlength=len(pools)).tolist(), strict=True)]
            if min(rank_left) < 0:  # a rank cannot decode all its sequences this step
                self.leave_batch()
                return None
        need = -(-(b.computed + 1 + spec) // self.bs) - b.blocks
        grow = np.flatnonzero(need > 0)
        if grow.size:
            totals = np.bincount(b.rank[grow], weights=need[grow], minlength=len(pools))
            if any(t > pool.free_blocks for t, pool in zip(totals.tolist(), pools, strict=True)):
                self.leave_batch()
                return None
            for i in grow.tolist():  # one sequence after another, as schedule() takes them
                seq = running[i]
                seq.blocks += pools[seq.rank].allocate(int(need[i]))  # type: ignore[operator]
            b.blocks[grow] += need[grow]
        decoders = list(running)
        admitted: list[tuple[Seq, int, int]] = []
        self._admit(admitted, budget - m, rank_left)
        # every decoder computes one token on top of its context (integer sums: exact)
        kv_read = int(b.computed.sum()) + m
        tokens, drafts, kv_read, pairs, pure = shape_sums(
            admitted, m, m * spec, kv_read, float(kv_read), True)
        busiest = None
        if len(pools) > 1 and tokens > m + len(admitted):  # admissions prefill under DP
            ranks = len(pools)
            count = np.bincount(b.rank, minlength=ranks).astype(np.float64)
            kv = np.bincount(b.rank, weights=b.computed + 1, minlength=ranks)
            busiest = busiest_rank(ranks, admitted,  # a decoder: 1 token, pairs = its KV read
                                   np.stack([count, count, kv, kv, count * spec]))
        if admitted:
            joining = [seq for seq, n, draft in admitted
                       if n == 1 and draft == spec and is_quiet_decoder(seq)]
            if len(joining) == len(admitted):
                b.extend(joining)
            else:  # not all decoders: the batch is left with the counters as they are now
                b.write_back(decoders)
                self._batch = None
        return Step(admitted, BatchShape(tokens, m + len(admitted), kv_read, pairs, drafts,
                                         busiest), pure, decoders=decoders, draft=spec)

    def _finish_batch(self, t: float) -> None:
        """finish() of a step scheduled over the DecodeBatch (and still over it)."""
        b = self._batch
        assert b is not None and len(b) == len(self.running)
        running = self.running
        self.steps_total += 1
        b.computed += 1
        if b.uncommitted:  # their prompt blocks become shareable, as finish() commits them
            for i in b.uncommitted:
                seq = running[i]
                seq.num_computed = int(b.computed[i])
                self._commit(seq)
            b.uncommitted = [i for i in b.uncommitted
                             if running[i].committed < len(running[i].hashes)]
        target = b.computed  # = prompt + output: each sampled a token
        if self.draft:  # finish()'s credit recursion, element by element (the same floats)
            credit = b.credit + self.accept_mean
            accepted = np.minimum(credit.astype(np.int64), self.draft)
            b.credit = credit - accepted
            gain = accepted + 1
        else:
            gain = np.ones(len(b), np.int64)
        left = b.max_tokens - b.output
        gain = np.minimum(gain, left)
        b.output += gain
        b.computed = target + gain - 1
        self.generation_tokens_total += int(gain.sum())
        ends = gain == left
        if not ends.any():
            return
        at = np.flatnonzero(ends).tolist()
        b.write_back(running, at)
        finished = [running[i] for i in at]
        for seq in finished:  # in running order, as finish() calls them
            seq.done = True
            if seq.sink is not None:
                seq.sink(seq, seq.num_output - seq.reported, t, None)
                seq.reported = seq.num_output
        if self._batch is not b:  # a sink made the batch be left
            self._reap(finished)
            return
        self._free(finished)
        keep = ~ends
        self.running = list(compress(running, keep.tolist()))  # (a C-level loop: ~1,500 a step)
        b.keep(keep)
        if len(self.running) < MIN_SEQS:
            self.leave_batch()
