"""Continuous batching for one engine instance: which sequences run in the next step.

Each step has a token budget (max_num_batched_tokens). Running sequences go first, in admission
order: a decoding sequence takes one token (plus draft tokens with speculative decoding), a
prefilling one a chunk of what is left of its prompt. Then waiting sequences are admitted while
the budget, the batch size (max_num_seqs) and the KV blocks last; a cached prompt prefix costs
nothing. When a running sequence needs a KV block and none is free, the most recently admitted
sequence is preempted: its blocks are freed and it will recompute its context later (with
prefix caching its computed blocks stay cached until evicted, so only what was evicted).
SGLang orders a step differently (``prefill_alone``): a step that can prefill (a chunk left, an
admission) holds only prefills, and the decoders wait for the next one. vLLM's V0 engine
without chunked prefill does the same with whole prompts (``whole_prompts``): a waiting prompt
joins a step only if all of it fits the step's budget (one that cannot fit even alone is
chunked rather than left waiting forever).

Under attention data parallelism each rank keeps the KV of its own sequences in its own pool:
a sequence is placed on one rank when admitted (the longest cached prefix, then the fewest
sequences, then the most free blocks, among ranks where it fits), and a rank that runs out
preempts its own most recent sequence. Each rank's scheduler takes at most its own token
budget a step (``rank_tokens``: TensorRT-LLM's and vLLM's per-rank budget, every token counted;
SGLang's share of the chunked prefill size, for prefill chunks alone), and a step that prefills
carries the aggregates of its busiest rank (the most new tokens) for the step model.

The core is clock-free: ``schedule()`` returns a step, the caller decides how long it takes and
when it ends, then ``finish()`` applies it. Real-time and virtual-time drivers share it.

The sequences and their KV blocks are kv_residency.py's, admission admission.py's: this class
builds on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import compress

import numpy as np

from .admission import Admission
from .batch_shape import BatchShape
from .config import SimConfig
from .decode_batch import MIN_SEQS, DecodeBatch, is_quiet_decoder
from .perf import PerfModel
from .seq import Seq
from .step import Step, busiest_rank, shape_sums


class EngineCore(Admission):
    def __init__(self, cfg: SimConfig, perf: PerfModel | None = None):
        super().__init__(cfg, perf)
        self._batch: DecodeBatch | None = None  # the running decoders as arrays (decode_batch)

    # ------------------------------------------------------------------ intake

    def add(self, seq: Seq) -> None:
        self.waiting.append(seq)

    def abort(self, seq: Seq) -> None:
        """The client went away: free its KV now (a step in flight skips it)."""
        if seq.done:
            return
        self.leave_batch()
        seq.aborted = seq.done = True
        if seq in self.running:
            self.running.remove(seq)
            self.pools[seq.rank].release(seq.blocks)
            self._leave_rank(seq)
            seq.blocks = []
        else:
            try:
                self.waiting.remove(seq)
            except ValueError:
                pass

    @property
    def load(self) -> int:
        return len(self.running) + len(self.waiting)

    # ------------------------------------------------------------------ one step

    def leave_batch(self) -> None:
        """Back to one sequence at a time: the sequences' own counters brought up to date."""
        if self._batch is not None:
            self._batch.write_back(self.running)
            self._batch = None

    def schedule(self) -> Step | None:
        if self.prefill_alone:
            step = self._prefill_step()
            if step is not None:
                return step
        running = self.running
        if (self._batch is None and len(running) >= MIN_SEQS
                and all(map(is_quiet_decoder, running))):
            self._batch = DecodeBatch(running)
        if self._batch is not None:
            step = self._schedule_batch()
            if step is not None:
                return step
        return self._build(prefill_only=False)

    def _prefill_step(self) -> Step | None:
        """SGLang's order (``prefill_alone``): a step that can prefill (a chunked prompt to
        continue, a waiting sequence to admit) prefills only, and the decoders wait for the
        next step; None when there is nothing to prefill."""
        if self._batch is not None:  # every running sequence decodes: only admissions
            if not self.could_admit():
                return None
            self.leave_batch()
        elif not self.waiting and not any(
                s.target - s.num_computed > 1 for s in self.running):
            return None
        return self._build(prefill_only=True)

    def _build(self, prefill_only: bool) -> Step | None:
        """The next step from the running sequences (``prefill_only``: those still
        prefilling) and then the waiting ones; None when it would be empty."""
        budget = self.step_tokens
        rank_left = self._rank_budgets()
        entries: list[tuple[Seq, int, int]] = []
        pools = self.pools
        running = self.running
        preempted = False
        bs, spec = self.bs, self.draft
        # the step's shape, summed as the entries are made (this loop runs per sequence)
        tokens = drafts = kv_read = 0
        pairs = 0.0
        pure = True
        i = 0
        while i < len(running) and budget > 0:
            seq = running[i]
            # (the target property and blocks_needed, inlined)
            done = seq.num_computed
            left = seq.prompt_len + seq.num_output - done
            if prefill_only and left == 1:  # a decoder: it sits this step out
                i += 1
                continue
            n = left if left < budget else budget
            counted = rank_left is not None and (left > 1 or self.rank_decodes)
            if counted:
                room = rank_left[seq.rank]  # type: ignore[index]
                if room <= 0:  # its rank's budget is spent: next step
                    i += 1
                    continue
                n = n if n < room else room
            draft = spec if spec and seq.num_output and n == left else 0
            need = -(-(done + n + draft) // bs) - len(seq.blocks)
            if need > 0:
                pool = pools[seq.rank]
                gone = False
                while pool.free_blocks < need and not gone:
                    # the most recently admitted sequence of this rank (perhaps seq itself)
                    victim = self._last_on_rank(seq.rank)
                    self._preempt(victim)
                    preempted = True
                    gone = victim is seq
                if gone:
                    break
                seq.blocks += pool.allocate(need)  # type: ignore[operator]
            entries.append((seq, n, draft))
            budget -= n
            if counted:
                rank_left[seq.rank] -= n  # type: ignore[index]
            i += 1
            tokens += n
            drafts += draft
            kv_read += done + n
            pairs += n * done + n * (n + 1) / 2
            if n != 1 or left != 1:
                pure = False
        if preempted:
            # a preemption took blocks of sequences already entered: sum the survivors again
            tokens = drafts = kv_read = 0
            pairs = 0.0
            pure = True
            kept = 0
        else:
            kept = len(entries)
            budget = self._admit(entries, budget, rank_left)
        if not entries:
            return None
        tokens, drafts, kv_read, pairs, pure = shape_sums(
            entries[kept:], tokens, drafts, kv_read, pairs, pure)
        busiest = None
        if len(pools) > 1 and tokens > len(entries):  # a step that prefills under DP
            busiest = busiest_rank(len(pools), entries)
        return Step(entries, BatchShape(tokens, len(entries), kv_read, pairs, drafts, busiest),
                    pure)

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


    def finish(self, step: Step, t: float) -> None:
        """Apply a step that ended at ``t``: advance every sequence, emit tokens, free the done."""
        if step.batched and self._batch is not None:
            self._finish_batch(t)
            return
        self.steps_total += 1
        finished: list[Seq] = []
        emitted = 0
        mean = self.accept_mean
        for seq, n, draft in step.entries:  # (runs per sequence: builtins kept out)
            if seq.aborted:
                continue
            computed = seq.num_computed + n
            seq.num_computed = computed
            if seq.committed < len(seq.hashes):  # full prompt blocks to share
                self._commit(seq)
            output = seq.num_output
            target = seq.prompt_len + output
            if computed < target:
                continue  # mid-prefill chunk
            g = 1
            if draft:
                credit = seq.credit + mean
                accepted = int(credit)
                if accepted > draft:
                    accepted = draft
                seq.credit = credit - accepted
                g += accepted
            left = seq.max_tokens - output
            if g > left:
                g = left
            seq.num_output = output + g
            seq.num_computed = target + g - 1
            emitted += g
            first = seq.first_at < 0
            if first:
                seq.first_at = t
            if g == left:
                seq.done = True
                finished.append(seq)
            if seq.sink is not None:
                if not seq.quiet:
                    seq.sink(seq, g, t, None)
                elif first or seq.done:
                    seq.sink(seq, output + g - seq.reported, t, None)
                    seq.reported = output + g
        self.generation_tokens_total += emitted
        if finished:
            self._reap(finished)


    # ------------------------------------------------------------------ virtual-time fast path
    #
    # A decode phase: consecutive decode-only steps that stepping one at a time would repeat
    # with the same batch. Its step times come from the performance model in numpy passes
    # (only the context grows) and the sequences are advanced once, at the phase's end.

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
