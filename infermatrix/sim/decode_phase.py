"""Virtual time's fast path: a decode phase, consecutive decode-only steps that stepping one
at a time would repeat with the same batch. Its step times come from the performance model in
numpy passes (only the context grows) and the sequences are advanced once, at the phase's end
(engine.py's Instance drives it: ``phase_limit``, ``extend_phase``, ``finish_streak``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .decode_batch_steps import DecodeBatchSteps
from .seq import Seq
from .step import Step


class DecodePhases(DecodeBatchSteps):
    """DecodeBatchSteps with decode phases: many decode steps applied at once."""

    def phase_limit(self, step: Step) -> int:
        """How many decode steps, ``step`` first, run with this batch unless new work arrives:
        no sequence finishes before the last of them, no waiting sequence could be admitted,
        and the KV blocks suffice. 1 when ``step`` does not start a phase. With speculative
        decoding, step times assume the mean number of accepted tokens. Without it, a step
        in which the last prefill chunks complete (the batch decodes from the next step on)
        starts a phase too: each of its sequences emits one token in it, as a decode does."""
        seqs = self.running
        b = self._batch if step.batched else None  # over a DecodeBatch: read from its arrays
        if (len(b if b is not None else step.entries) != len(seqs)
                or len(seqs) > self.step_tokens
                or self.could_admit()
                or not (step.pure_decode or self._prefills_complete(step))):
            return 1
        per_step = self.tokens_per_step
        if b is not None:
            left = int((b.max_tokens - b.output).min())
        else:
            left = min([s.max_tokens - s.num_output for s in seqs])
        # with drafts, stop before any sequence could reach its end mid-phase; without, the
        # last step may finish sequences (finish_streak handles that exactly)
        k = int((left - 1) / per_step) if self.draft else left
        if k > 1:
            # tokens computed as if the first step had been a decode (a prefill chunk of n
            # tokens counts n - 1 more), blocks held, rank
            if b is not None:  # (decoders: n = 1)
                held = (b.computed, b.blocks, b.rank)
            else:
                size = len(step.entries)
                held = (np.fromiter((s.num_computed + n - 1 for s, n, _ in step.entries),
                                    np.int64, size),
                        np.fromiter((len(s.blocks) for s, _, _ in step.entries), np.int64, size),
                        np.fromiter((s.rank for s, _, _ in step.entries), np.int64, size))
            while k > 1 and not self._streak_fits(*held, k, per_step):
                k //= 2
        return max(k, 1)

    def _prefills_complete(self, step: Step) -> bool:
        """Every sequence of ``step`` samples a token at its end (the prefilling ones finish
        their prompt in it), with no drafts, and no prompt block is left to share (a phase
        shares them at its end, stepping at this step's end: a probe in between differs)."""
        if self.draft:
            return False
        for seq, n, _ in step.entries:
            if seq.num_computed + n != seq.prompt_len + seq.num_output:
                return False
            if seq.hashes and min((seq.num_computed + n) // self.bs, len(seq.hashes)) > seq.committed:
                return False
        return True

    @property
    def tokens_per_step(self) -> float:
        """Tokens a decoding sequence gains per step (1, or 1 + mean accepted drafts)."""
        return 1.0 + self.accept_mean if self.draft else 1.0

    def extend_phase(self, step: Step, ends: list[float], horizon: float, at_least: int,
                     limit: int) -> None:
        """Append the end times of the phase's next steps to ``ends`` (``ends[0]`` is
        ``step``'s): until one ends at or after ``horizon`` and there are ``at_least``, never
        more than ``limit``. The step times come from the model in chunks (one numpy pass
        each), as many as the horizon seems to need, then are cut where stepping would stop."""
        b = len(step.entries)
        context = step.shape.kv_read - b  # tokens held before the phase's first step
        grow = b * self.tokens_per_step  # tokens the batch gains per step
        j = len(ends)
        if j >= at_least and ends[-1] >= horizon:
            return
        n = at_least - j
        while j < limit:
            n = min(max(n, 1), limit - j)
            contexts = (context + np.arange(j, j + n) * grow).astype(np.int64)
            durations = self.perf.decode_times(b, contexts, self.draft)
            # the running sum, added in the order stepping adds them
            times = np.cumsum(np.concatenate(([ends[-1]], durations)))[1:]
            first = max(at_least - j - 1, 0)  # the steps before it are needed whatever
            late = np.flatnonzero(times[first:] >= horizon)
            if late.size:
                ends.extend(times[:first + late[0] + 1].tolist())
                return
            ends.extend(times.tolist())
            j += n
            # the steps still needed to reach the horizon, at the latest (longest) step time
            n = int((horizon - ends[-1]) / durations[-1]) + 1 if horizon < math.inf else limit

    def _streak_fits(self, computed: np.ndarray, blocks: np.ndarray, rank: np.ndarray, k: int,
                     per_step: float) -> bool:
        """Whether every rank's free blocks cover what its sequences (tokens computed, blocks
        held, rank: one array each) may need beyond what they hold after ``k`` more steps."""
        grow = int(k * per_step) + 1 + self.draft
        extra = -(-(computed + grow) // self.bs) - blocks
        short = extra > 0
        need = np.bincount(rank[short], weights=extra[short], minlength=len(self.pools))
        return all(n <= p.free_blocks for n, p in zip(need.tolist(), self.pools, strict=True))

    def finish_streak(self, step: Step, ends: Sequence[float], want_times: bool = True) -> None:
        """Apply ``len(ends)`` decode steps of a phase at once (see phase_limit)."""
        self.leave_batch()
        k = len(ends)
        self.steps_total += k
        pools, bs, spec = self.pools, self.bs, self.draft
        finished: list[Seq] = []
        mean = self.accept_mean
        first, last = ends[0], ends[-1]
        shared = np.asarray(ends) if want_times else None  # one array for the whole batch
        spec_times = None
        if spec and want_times:  # before the credits move on
            spec_times = self._spec_times([s for s, _, _ in step.entries if not s.aborted], shared)
        # one pass: each sequence's gain, tokens computed and blocks to take; then the blocks
        # the batch grows into, one call per rank pool (phase_limit checked each rank's free
        # blocks): the same blocks, in the same order, as one call per sequence
        plan: list[tuple[Seq, int, int, int]] = []
        totals = [0] * len(pools)
        emitted = 0
        for seq, n, _ in step.entries:
            if seq.aborted:
                continue
            g = k
            if spec:  # the credit recursion of finish() over k steps, in closed form
                total_accepted = int(seq.credit + k * mean)
                seq.credit = seq.credit + k * mean - total_accepted
                g += total_accepted
            # the first step may complete prefills: n tokens computed instead of one
            computed = seq.num_computed + g + n - 1
            need = -(-(computed + spec) // bs) - len(seq.blocks)
            if need > 0:
                totals[seq.rank] += need
            plan.append((seq, g, computed, need))
            emitted += g
        fresh: dict[int, list[int]] = {}
        for rank, pool in enumerate(pools):
            if totals[rank]:
                got = pool.allocate(totals[rank])
                assert got is not None
                fresh[rank] = got
        taken = [0] * len(pools)
        for i, (seq, g, computed, need) in enumerate(plan):
            if need > 0:
                at = taken[seq.rank]
                seq.blocks += fresh[seq.rank][at:at + need]
                taken[seq.rank] = at + need
            seq.num_computed = computed  # = target - 1: its last token is computed next step
            if seq.committed < len(seq.hashes):  # full prompt blocks to share
                self._commit(seq)
            seq.num_output += g
            starts = seq.first_at < 0
            if starts:
                seq.first_at = first
            if seq.num_output >= seq.max_tokens:
                seq.done = True
                finished.append(seq)
            if seq.sink is not None and (not seq.quiet or starts or seq.done):
                times = shared if spec_times is None else spec_times[i]
                if times is None and seq.num_output == g:  # its first token: at the first step
                    times = np.asarray(ends)
                if seq.quiet:  # the tokens since the sink last heard
                    g, seq.reported = seq.num_output - seq.reported, seq.num_output
                seq.sink(seq, g, last, times)
        self.generation_tokens_total += emitted
        if finished:
            self._reap(finished)

    def _spec_times(self, seqs: Sequence[Seq], ends: np.ndarray) -> list[np.ndarray]:
        """Per sequence, the time of each token of a phase under speculative decoding: a step
        emits 1 + the drafts accepted in it, as finish()'s credit recursion accepts them (the
        whole batch in one numpy pass, then one view per sequence)."""
        k = len(ends)
        credits = np.array([s.credit for s in seqs])
        marks = np.floor(credits[:, None] + np.arange(k + 1) * self.accept_mean)
        counts = 1 + np.diff(marks, axis=1).astype(np.int64)  # tokens per sequence per step
        flat = np.repeat(np.tile(ends, len(seqs)), counts.ravel())
        return np.split(flat, np.cumsum(counts.sum(axis=1))[:-1])
