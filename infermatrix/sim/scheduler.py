"""Continuous batching for one engine instance: which sequences run in the next step.

Each step has a token budget (max_num_batched_tokens). Running sequences go first, in admission
order: a decoding sequence takes one token (plus draft tokens with speculative decoding), a
prefilling one a chunk of what is left of its prompt. Then waiting sequences are admitted while
the budget, the batch size (max_num_seqs) and the KV blocks last; a cached prompt prefix costs
nothing. When a running sequence needs a KV block and none is free, the most recently admitted
sequence is preempted: its blocks are freed and it will recompute its context later.

The core is clock-free: ``schedule()`` returns a step, the caller decides how long it takes and
when it ends, then ``finish()`` applies it. Real-time and virtual-time drivers share it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .config import SimConfig
from .perf import BatchShape, PerfModel
from .prefix_cache import BlockPool

# Keep this share of blocks free when admitting, so running decodes rarely have to preempt.
ADMISSION_WATERMARK = 0.01


# sink(seq, n, t, times): n tokens emitted, the last at model time t; ``times`` holds one time
# per token (a numpy array) when they were emitted by several steps at once (a virtual-time
# decode phase; the sequences of one phase may share the array: read it, never change it).
Sink = Callable[["Seq", int, float, Sequence[float] | None], None]


class Seq:
    """One sequence inside one instance."""

    __slots__ = ("rid", "prompt_len", "max_tokens", "hashes", "sink", "num_computed", "num_output",
                 "blocks", "committed", "cached_tokens", "admitted", "preemptions", "credit",
                 "first_at", "done", "aborted", "remote_kv")

    def __init__(self, rid: int, prompt_len: int, max_tokens: int, hashes: Sequence[int] = (),
                 sink: Sink | None = None, *, remote_kv: bool = False, already_output: int = 0):
        self.rid = rid
        self.prompt_len = prompt_len
        self.max_tokens = max_tokens
        self.hashes = hashes
        self.sink = sink
        self.num_computed = 0
        self.num_output = already_output
        self.blocks: list[int] = []
        self.committed = 0
        self.cached_tokens = 0
        self.admitted = False
        self.preemptions = 0
        self.credit = 0.5  # speculative decoding: fractional accepted tokens carried over
        self.first_at = -1.0
        self.done = False
        self.aborted = False
        self.remote_kv = remote_kv  # KV arrives from a prefill instance: no prefill here

    @property
    def target(self) -> int:
        """Tokens whose KV must exist before the next token can be sampled."""
        return self.prompt_len + self.num_output


@dataclass
class Step:
    entries: list[tuple[Seq, int, int]]  # (sequence, tokens computed, draft tokens)
    shape: BatchShape
    pure_decode: bool  # every sequence decodes (one token, plus drafts): no prefill chunk


class EngineCore:
    def __init__(self, cfg: SimConfig, perf: PerfModel | None = None):
        self.cfg = cfg
        self.perf = perf or PerfModel(cfg)
        self.pool = BlockPool(cfg.num_blocks, cfg.block_size, cfg.prefix_caching)
        self.bs = cfg.block_size
        self.draft = cfg.spec_draft_tokens
        # expected accepted draft tokens per step (chain acceptance a + a² + … + a^k)
        a = cfg.spec_acceptance
        self.accept_mean = sum(a ** i for i in range(1, self.draft + 1))
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.watermark = int(cfg.num_blocks * ADMISSION_WATERMARK)
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
        seq.aborted = seq.done = True
        if seq in self.running:
            self.running.remove(seq)
            self.pool.release(seq.blocks)
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

    def schedule(self) -> Step | None:
        budget = self.cfg.max_num_batched_tokens
        entries: list[tuple[Seq, int, int]] = []
        pool = self.pool
        running = self.running
        preempted = False
        bs, spec = self.bs, self.draft
        i = 0
        while i < len(running) and budget > 0:
            seq = running[i]
            # (the target property and blocks_needed, inlined: this loop runs per sequence)
            left = seq.prompt_len + seq.num_output - seq.num_computed
            n = left if left < budget else budget
            draft = spec if spec and seq.num_output and n == left else 0
            need = -(-(seq.num_computed + n + draft) // bs) - len(seq.blocks)
            if need > 0:
                while pool.free_blocks < need and running[-1] is not seq:
                    self._preempt(running[-1])
                    preempted = True
                if pool.free_blocks < need:
                    self._preempt(seq)
                    preempted = True
                    break
                seq.blocks += pool.allocate(need)  # type: ignore[operator]
            entries.append((seq, n, draft))
            budget -= n
            i += 1
        if not preempted:
            budget = self._admit(entries, budget)
        if not entries:
            return None
        tokens = seqs = kv_read = drafts = 0
        pairs = 0.0
        pure = True
        for seq, n, draft in entries:
            done = seq.num_computed
            tokens += n
            drafts += draft
            kv_read += done + n
            pairs += n * done + n * (n + 1) / 2
            if n != 1 or done + 1 != seq.prompt_len + seq.num_output:
                pure = False
        seqs = len(entries)
        return Step(entries, BatchShape(tokens, seqs, kv_read, pairs, drafts), pure)

    def _admit(self, entries: list[tuple[Seq, int, int]], budget: int) -> int:
        pool = self.pool
        while self.waiting and budget > 0 and len(self.running) < self.cfg.max_num_seqs:
            seq = self.waiting[0]
            if seq.remote_kv and not seq.admitted:
                seq.num_computed = seq.prompt_len + seq.num_output - 1
                matched: list[int] = []
            else:
                matched = pool.match(seq.hashes) if seq.hashes else []
                # at least one token must be computed to sample from
                while matched and len(matched) * self.bs >= seq.target:
                    matched.pop()
                seq.num_computed = len(matched) * self.bs
            n = min(seq.target - seq.num_computed, budget)
            draft = self.draft if seq.num_output and seq.num_computed + n == seq.target else 0
            pool.acquire(matched)
            need = self.blocks_needed(seq.num_computed + n + draft) - len(matched)
            fresh = pool.allocate(need) if pool.free_blocks - need >= self.watermark or not self.running else None
            if fresh is None:
                pool.release(matched)
                seq.num_computed = 0
                break
            self.waiting.popleft()
            if not seq.admitted:
                seq.admitted = True
                seq.cached_tokens = len(matched) * self.bs
                if seq.hashes:
                    pool.record_lookup(seq.prompt_len, seq.cached_tokens)
                self.prompt_tokens_total += seq.prompt_len
            seq.blocks = matched + fresh
            seq.committed = len(matched)
            self.running.append(seq)
            entries.append((seq, n, draft))
            budget -= n
        return budget

    def _preempt(self, seq: Seq) -> None:
        self.running.remove(seq)
        self.pool.release(seq.blocks)
        seq.blocks = []
        seq.num_computed = 0
        seq.committed = 0
        seq.remote_kv = False  # its KV is gone: recompute locally
        seq.preemptions += 1
        self.preemptions_total += 1
        self.waiting.appendleft(seq)

    def finish(self, step: Step, t: float) -> None:
        """Apply a step that ended at ``t``: advance every sequence, emit tokens, free the done."""
        self.steps_total += 1
        any_done = False
        emitted = 0
        for seq, n, draft in step.entries:
            if seq.aborted:
                continue
            computed = seq.num_computed + n
            seq.num_computed = computed
            if seq.committed < len(seq.hashes):  # full prompt blocks to share
                self._commit(seq)
            target = seq.prompt_len + seq.num_output
            if computed < target:
                continue  # mid-prefill chunk
            g = 1
            if draft:
                seq.credit += self.accept_mean
                accepted = min(int(seq.credit), draft)
                seq.credit -= accepted
                g += accepted
            g = min(g, seq.max_tokens - seq.num_output)
            seq.num_output += g
            seq.num_computed = target + g - 1
            emitted += g
            if seq.first_at < 0:
                seq.first_at = t
            if seq.num_output >= seq.max_tokens:
                seq.done = any_done = True
            if seq.sink is not None:
                seq.sink(seq, g, t, None)
        self.generation_tokens_total += emitted
        if any_done:
            self._reap()

    def _commit(self, seq: Seq) -> None:
        full = min(seq.num_computed // self.bs, len(seq.hashes))
        if full > seq.committed:
            for j in range(seq.committed, full):
                self.pool.commit(seq.blocks[j], seq.hashes[j])
            seq.committed = full

    def _reap(self) -> None:
        keep = []
        for seq in self.running:
            if seq.done:
                self.pool.release(seq.blocks)
                seq.blocks = []
                self.finished_total += 1
            else:
                keep.append(seq)
        self.running = keep

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
        if (len(step.entries) != len(seqs) or len(seqs) > self.cfg.max_num_batched_tokens
                or (self.waiting and len(seqs) < self.cfg.max_num_seqs)
                or not (step.pure_decode or self._prefills_complete(step))):
            return 1
        per_step = self.tokens_per_step
        left = min([s.max_tokens - s.num_output for s in seqs])
        # with drafts, stop before any sequence could reach its end mid-phase; without, the
        # last step may finish sequences (finish_streak handles that exactly)
        k = int((left - 1) / per_step) if self.draft else left
        if k > 1:
            # tokens computed as if the first step had been a decode (a prefill chunk of n
            # tokens counts n - 1 more)
            held = [(s.num_computed + n - 1, len(s.blocks)) for s, n, _ in step.entries]
            while k > 1 and self._streak_blocks(held, k, per_step) > self.pool.free_blocks:
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

    def _streak_blocks(self, held: Sequence[tuple[int, int]], k: int, per_step: float) -> int:
        """Blocks the sequences (tokens computed, blocks held) may need beyond what they hold,
        after ``k`` more steps."""
        grow = int(k * per_step) + 1 + self.draft
        bs = self.bs
        need = 0
        for computed, blocks in held:
            extra = -(-(computed + grow) // bs) - blocks
            if extra > 0:
                need += extra
        return need

    def finish_streak(self, step: Step, ends: Sequence[float], want_times: bool = True) -> None:
        """Apply ``len(ends)`` decode steps of a phase at once (see phase_limit)."""
        k = len(ends)
        self.steps_total += k
        bs, spec = self.bs, self.draft
        any_done = False
        mean = self.accept_mean
        first, last = ends[0], ends[-1]
        shared = np.asarray(ends) if want_times else None  # one array for the whole batch
        live = [(seq, n) for seq, n, _ in step.entries if not seq.aborted]
        seqs = [seq for seq, _ in live]
        spec_times = self._spec_times(seqs, shared) if spec and want_times else None
        if spec:
            # the credit recursion of finish() over k steps, in closed form
            gains = []
            for seq in seqs:
                total_accepted = int(seq.credit + k * mean)
                seq.credit = seq.credit + k * mean - total_accepted
                gains.append(k + total_accepted)
        else:
            gains = [k] * len(seqs)
        # the blocks the batch grows into, taken in one call: the same blocks, in the same
        # order, as one call per sequence
        # the first step may complete prefills: n tokens computed instead of one (phase_limit)
        computed = [seq.num_computed + g + n - 1 for (seq, n), g in zip(live, gains, strict=True)]
        needs = [-(-(c + spec) // bs) - len(seq.blocks) for seq, c in zip(seqs, computed, strict=True)]
        total = sum(n for n in needs if n > 0)
        fresh = self.pool.allocate(total) if total else []
        assert fresh is not None  # phase_limit checked the free blocks
        taken = 0
        for i, seq in enumerate(seqs):
            g = gains[i]
            need = needs[i]
            if need > 0:
                seq.blocks += fresh[taken:taken + need]
                taken += need
            seq.num_computed = computed[i]  # = target - 1: its last token is computed next step
            if seq.committed < len(seq.hashes):  # full prompt blocks to share
                self._commit(seq)
            seq.num_output += g
            if seq.first_at < 0:
                seq.first_at = first
            if seq.num_output >= seq.max_tokens:
                seq.done = any_done = True
            if seq.sink is not None:
                times = shared if spec_times is None else spec_times[i]
                if times is None and seq.num_output == g:  # its first token: at the first step
                    times = np.asarray(ends)
                seq.sink(seq, g, last, times)
        self.generation_tokens_total += sum(gains)
        if any_done:
            self._reap()

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
