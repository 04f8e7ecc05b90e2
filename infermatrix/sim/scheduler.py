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
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from itertools import compress

import numpy as np

from .batch_shape import BatchShape
from .config import SimConfig
from .decode_batch import MIN_SEQS, DecodeBatch, is_quiet_decoder
from .perf import PerfModel
from .prefix_cache import BlockPool, RankPools
from .seq import Seq
from .step import Step, busiest_rank, shape_sums

# Keep this share of blocks free when admitting, so running decodes rarely have to preempt.
ADMISSION_WATERMARK = 0.01
# salt of the cache identities a preempted sequence gives its own blocks (see _keep_cached)
PREEMPTED = "preempted"


class EngineCore:
    def __init__(self, cfg: SimConfig, perf: PerfModel | None = None):
        self.cfg = cfg
        self.perf = perf or PerfModel(cfg)
        ranks = cfg.kv_ranks
        self.pools = [BlockPool(cfg.num_blocks // ranks, cfg.block_size, cfg.prefix_caching)
                      for _ in range(ranks)]
        self.pool = RankPools(self.pools)  # the instance's view (metrics, router, resets)
        self.rank_seqs = [0] * ranks  # running sequences per rank
        self.step_tokens = cfg.step_tokens  # the instance's token budget a step
        # under attention DP: tokens each rank takes a step at most (0: no such budget),
        # whether decoders draw on it (not SGLang's), and what is left of it in the step
        # being built
        self.rank_chunk = cfg.rank_tokens
        self.rank_decodes = not cfg.rank_prefill_only
        self.rank_max_seqs = cfg.rank_max_seqs
        self.bs = cfg.block_size
        self.draft = cfg.spec_draft_tokens
        # expected accepted draft tokens per step (chain acceptance a + a² + … + a^k)
        a = cfg.spec_acceptance
        self.accept_mean = sum(a ** i for i in range(1, self.draft + 1))
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.watermark = int(cfg.num_blocks // ranks * ADMISSION_WATERMARK)  # per rank
        # TensorRT-LLM GUARANTEED_NO_EVICT: blocks reserved to completion by the running
        # sequences of each rank, against the rank's whole pool
        self.reserve = cfg.reserve_to_completion
        # SGLang without mixed chunks: a step that prefills runs no decodes (see _prefill_step)
        self.prefill_alone = cfg.prefill_alone
        self.whole = cfg.whole_prompts
        self.rank_reserved = [0] * ranks
        self.rank_blocks = cfg.num_blocks // ranks
        self._batch: DecodeBatch | None = None  # the running decoders as arrays (decode_batch)
        # sequences the last schedule() admitted whose first token is due now (first_on_admit):
        # the caller, which knows the time, hands it to their sinks
        self.joined: list[Seq] = []
        # counters for /metrics
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.preemptions_total = 0
        self.finished_total = 0
        self.steps_total = 0

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

    def blocks_needed(self, tokens: int) -> int:
        return -(-tokens // self.bs)

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

    def _rank_budgets(self) -> list[int] | None:
        """A fresh step's token budget per rank (None without per-rank budgets)."""
        return [self.rank_chunk] * len(self.pools) if self.rank_chunk else None

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

    def _last_on_rank(self, rank: int) -> Seq:
        running = self.running
        if len(self.pools) == 1:
            return running[-1]
        return next(s for s in reversed(running) if s.rank == rank)

    def _matched(self, seq: Seq, pool: BlockPool) -> list[int]:
        """The cached blocks ``seq`` can reuse from ``pool``: short of its whole context, since
        at least one token must be computed to sample from."""
        if seq.remote_kv and not seq.admitted:
            return []
        matched = pool.match(seq.hashes) if seq.hashes else []
        while matched and len(matched) * self.bs >= seq.target:
            matched.pop()
        return matched

    def _place(self, seq: Seq, rank_left: list[int] | None = None) -> tuple[int, list[int], bool]:
        """The attention-DP rank for a sequence being admitted, its cached blocks there and
        whether the rank has room for it (``_room``): among ranks with room, the longest cached
        prefix (a conversation stays with its rank even when that rank spent this step's
        budget: it waits for the next), then token budget left this step (given
        ``rank_left``), then the fewest sequences, then the most free blocks."""
        need = self.blocks_needed(seq.target)
        best: tuple[tuple[bool, int, bool, int, int], int, list[int]] | None = None
        for r, pool in enumerate(self.pools):
            matched = self._matched(seq, pool)
            free = pool.free_blocks
            key = (self._room(r, seq, matched, need, free), len(matched),
                   rank_left is None or rank_left[r] > 0, -self.rank_seqs[r], free)
            if best is None or key > best[0]:
                best = (key, r, matched)
        assert best is not None
        return best[1], best[2], best[0][0]

    def _room(self, r: int, seq: Seq, matched: list[int], need: int, free: int) -> bool:
        """Whether rank ``r`` (``free`` blocks free) can take ``seq`` (``need`` blocks for its
        target): below its batch limit, with those blocks free above the watermark, and under
        reserve_to_completion with its whole prompt + output reserved besides what the running
        sequences reserved."""
        if self.rank_seqs[r] >= self.rank_max_seqs:
            return False
        return (free - need + len(matched) >= self.watermark
                and (not self.reserve or not self.rank_seqs[r]
                     or self.rank_reserved[r] + self._to_completion(seq, matched) <= self.rank_blocks))

    def _to_completion(self, seq: Seq, matched: list[int]) -> int:
        """Blocks a sequence reserves at admission: its whole prompt + output, less the cached
        prefix it shares."""
        return self.blocks_needed(seq.prompt_len + seq.max_tokens) - len(matched)

    def _leave_rank(self, seq: Seq) -> None:
        self.rank_seqs[seq.rank] -= 1
        self.rank_reserved[seq.rank] -= seq.reserved
        seq.reserved = 0

    def could_admit(self) -> bool:
        """Whether the head of the queue could join the batch at a step of a decode phase
        (every running sequence decodes, none leaves). Under reserve_to_completion a
        reservation frees only when a sequence leaves. Otherwise a rank admits when it is
        empty, or when the head's first chunk fits above the watermark (``_admit``'s test). In
        a phase blocks are only allocated, so a rank that fails that test now fails it at
        every step of the phase: a full KV pool does not cut a phase into single steps."""
        if not self.waiting or len(self.running) >= self.cfg.max_num_seqs:
            return False
        seq = self.waiting[0]
        if self.reserve:
            return self._place(seq)[2]
        budget = self.step_tokens
        if not self.prefill_alone:
            budget -= len(self.running)  # decoders take 1 each
        for r, pool in enumerate(self.pools):
            chunk = budget
            if self.rank_chunk:  # the rank's own budget, less its decoders where they count
                chunk = min(chunk, self.rank_chunk - self.rank_seqs[r] * self.rank_decodes)
            if self.rank_seqs[r] >= self.rank_max_seqs or chunk <= 0:
                continue
            matched = self._matched(seq, pool)
            if self._chunk_fits(r, pool, matched, self._first_chunk(seq, matched, chunk)[3]):
                return True
        return False

    def _chunk_fits(self, rank: int, pool: BlockPool, matched: list[int], need: int) -> bool:
        """Whether ``rank`` takes a first chunk needing ``need`` fresh blocks besides its
        cached ``matched`` ones: an empty rank always, another above the watermark."""
        return not self.rank_seqs[rank] or pool.free_after_acquire(matched) - need >= self.watermark

    def _first_chunk(self, seq: Seq, matched: list[int], budget: int
                     ) -> tuple[int, int, int, int]:
        """What admitting ``seq`` computes at once: its computed tokens (a cached prefix, a
        warm start or remote KV), its first chunk's tokens, its draft tokens, and the fresh
        blocks they need."""
        if seq.remote_kv and not seq.admitted:
            computed = seq.prompt_len + seq.num_output - 1
        else:
            computed = max(len(matched) * self.bs, min(seq.warm, seq.target - 1))
        n = min(seq.target - computed, budget)
        draft = self.draft if seq.num_output and computed + n == seq.target else 0
        return computed, n, draft, self.blocks_needed(computed + n + draft) - len(matched)

    def _admit(self, entries: list[tuple[Seq, int, int]], budget: int,
               rank_left: list[int] | None = None) -> int:
        """Admit waiting sequences into ``entries`` within ``budget`` tokens (and, under
        per-rank budgets, what ``rank_left`` leaves each rank, spent as they join); returns
        the budget left."""
        while self.waiting and budget > 0 and len(self.running) < self.cfg.max_num_seqs:
            seq = self.waiting[0]
            rank, matched, room = self._place(seq, rank_left)
            if self.rank_seqs[rank] >= self.rank_max_seqs:
                break  # every rank is full
            if self.reserve and not room:
                break  # no rank can reserve its KV to completion: wait for one to finish
            chunk = budget
            if rank_left is not None:
                chunk = min(budget, rank_left[rank])
                if chunk <= 0:
                    break  # its rank took its budget this step: the next one
            pool = self.pools[rank]
            seq.num_computed, n, draft, need = self._first_chunk(seq, matched, chunk)
            if self.whole and entries and seq.num_computed + n < seq.target:
                seq.num_computed = 0  # its whole prompt does not fit what is left of the step
                break
            if not self._chunk_fits(rank, pool, matched, need):
                seq.num_computed = 0  # (checked before acquiring: the usual way to stop)
                break
            pool.acquire(matched)
            fresh = pool.allocate(need)
            if fresh is None:
                pool.release(matched)
                seq.num_computed = 0
                break
            self.waiting.popleft()
            seq.rank = rank
            self.rank_seqs[rank] += 1
            if self.reserve:
                seq.reserved = self._to_completion(seq, matched)
                self.rank_reserved[rank] += seq.reserved
            if not seq.admitted:
                seq.admitted = True
                if seq.first_on_admit:
                    self.joined.append(seq)
                seq.cached_tokens = len(matched) * self.bs
                if seq.hashes:
                    pool.record_lookup(seq.prompt_len, seq.cached_tokens)
                if seq.warm:  # reported as the engine would: a prefix it did not compute
                    seq.cached_tokens, seq.warm = max(seq.cached_tokens, seq.num_computed), 0
                self.prompt_tokens_total += seq.prompt_len
            seq.blocks = matched + fresh
            seq.committed = len(matched)
            self.running.append(seq)
            entries.append((seq, n, draft))
            budget -= n
            if rank_left is not None:
                rank_left[rank] -= n
        return budget

    def _preempt(self, seq: Seq) -> None:
        self.running.remove(seq)
        pool = self.pools[seq.rank]
        self._keep_cached(seq, pool)
        pool.release(seq.blocks)
        self._leave_rank(seq)
        seq.blocks = []
        seq.num_computed = 0
        seq.committed = 0
        seq.remote_kv = False  # its KV is gone: recompute locally
        seq.preemptions += 1
        self.preemptions_total += 1
        self.waiting.appendleft(seq)

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

    def _commit(self, seq: Seq) -> None:
        full = min(seq.num_computed // self.bs, len(seq.hashes))
        if full > seq.committed:
            done = seq.committed
            self.pools[seq.rank].commit_many(seq.blocks[done:full], seq.hashes[done:full])
            seq.committed = full

    def _keep_cached(self, seq: Seq, pool: BlockPool) -> None:
        """A preempted sequence's computed full blocks stay in the prefix cache, evictable, as
        a freed request's blocks do in vLLM (docs, design "Automatic Prefix Caching": freed
        blocks join the free queue still hashed, evicted least recently used first) and in
        SGLang's radix cache: back in, it recomputes only what was evicted meanwhile. Blocks
        past its prompt's own identity (a prompt without hashes, generated tokens) get hashes
        of this sequence alone."""
        full = min(seq.num_computed // self.bs, len(seq.blocks))
        if not pool.caching or full <= seq.committed:
            return
        if len(seq.hashes) < full:
            seq.hashes = (*seq.hashes,
                          *(hash((PREEMPTED, seq.rid, j)) for j in range(len(seq.hashes), full)))
        self._commit(seq)  # its full blocks, each under its hash

    def _free(self, finished: list[Seq]) -> None:
        """Give the finished sequences' blocks back to their ranks' pools, in order."""
        for seq in finished:
            self.pools[seq.rank].release(seq.blocks)
            self._leave_rank(seq)
            seq.blocks = []
            self.finished_total += 1

    def _reap(self, finished: list[Seq]) -> None:
        """Free the sequences that finished (``finished``: in running order, as the blocks
        go back in that order) and take them out of the running list."""
        self._free(finished)
        if len(finished) > 8:
            self.running = [s for s in self.running if not s.done]
        else:
            for seq in finished:
                self.running.remove(seq)  # by identity: Seq has no __eq__

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
