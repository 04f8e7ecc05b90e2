"""Continuous batching for one engine instance: which sequences run in the next step.

Each step has a token budget (max_num_batched_tokens). Running sequences go first, in admission
order: a decoding sequence takes one token (plus draft tokens with speculative decoding), a
prefilling one a chunk of what is left of its prompt. Then waiting sequences are admitted while
the budget, the batch size (max_num_seqs) and the KV blocks last (admission.py). When a running
sequence needs a KV block and none is free, the most recently admitted sequence of its rank is
preempted (kv_residency.py). SGLang orders a step differently (``prefill_alone``): a step that
can prefill (a chunk left, an admission) holds only prefills, and the decoders wait for the next
one. vLLM's V0 engine without chunked prefill does the same with whole prompts
(``whole_prompts``): a waiting prompt joins a step only if all of it fits the step's budget (one
that cannot fit even alone is chunked rather than left waiting forever). Under attention data
parallelism each rank keeps the KV of its own sequences in its own pool and takes at most its
own token budget a step, and a step that prefills carries the aggregates of its busiest rank
(the most new tokens) for the step model (step.py).

The core is clock-free: ``schedule()`` returns a step, the caller decides how long it takes and
when it ends, then ``finish()`` applies it. Real-time and virtual-time drivers share it.

EngineCore is built in layers, one module each, each class on top of the one before:
kv_residency.py (the sequences and the KV blocks they hold, rank by rank), admission.py (which
waiting sequences join, on which rank), decode_batch_steps.py (steps over a batch of quiet
decoders as arrays), decode_phase.py (virtual time's decode phases), and here a step built and
applied one sequence at a time.
"""

from __future__ import annotations

from .batch_shape import BatchShape
from .decode_phase import DecodePhases
from .seq import Seq
from .step import Step, busiest_rank, shape_sums


class EngineCore(DecodePhases):
    """One engine instance's scheduler: ``schedule()`` the next step, ``finish()`` it."""

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

    def schedule(self) -> Step | None:
        if self.prefill_alone:
            step = self._prefill_step()
            if step is not None:
                return step
        step = self._batch_step()
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
