"""Which waiting sequences join a step, and on which attention-DP rank.

Waiting sequences are admitted first come first served while the step's token budget, the
batch size (max_num_seqs) and the KV blocks last; a cached prompt prefix costs nothing, and a
sequence joins only if its first chunk's blocks leave a watermark free. Under attention data
parallelism a sequence is placed on one rank when admitted (the longest cached prefix, then
token budget left this step, then the fewest sequences, then the most free blocks, among ranks
where it fits), and each rank's scheduler takes at most its own token budget a step
(``rank_tokens``: TensorRT-LLM's and vLLM's per-rank budget, every token counted; SGLang's share
of the chunked prefill size, for prefill chunks alone). Under TensorRT-LLM's GUARANTEED_NO_EVICT
(``reserve_to_completion``) a rank admits only what its whole pool can carry to completion.
``could_admit`` asks the same question of the head of the queue for a decode phase.
"""

from __future__ import annotations

from .config import SimConfig
from .kv_residency import KVResidency
from .perf import PerfModel
from .prefix_cache import BlockPool
from .seq import Seq

# Keep this share of blocks free when admitting, so running decodes rarely have to preempt.
ADMISSION_WATERMARK = 0.01


class Admission(KVResidency):
    """KVResidency with the admission of waiting sequences: placement, room, first chunk."""

    def __init__(self, cfg: SimConfig, perf: PerfModel | None = None):
        super().__init__(cfg, perf)
        ranks = cfg.kv_ranks
        self.step_tokens = cfg.step_tokens  # the instance's token budget a step
        # under attention DP: tokens each rank takes a step at most (0: no such budget),
        # whether decoders draw on it (not SGLang's), and what is left of it in the step
        # being built
        self.rank_chunk = cfg.rank_tokens
        self.rank_decodes = not cfg.rank_prefill_only
        self.rank_max_seqs = cfg.rank_max_seqs
        self.watermark = int(cfg.num_blocks // ranks * ADMISSION_WATERMARK)  # per rank
        # TensorRT-LLM GUARANTEED_NO_EVICT: a sequence joins a rank only with its blocks to
        # completion reserved there (rank_reserved)
        self.reserve = cfg.reserve_to_completion
        # SGLang without mixed chunks: a step that prefills runs no decodes (see _prefill_step)
        self.prefill_alone = cfg.prefill_alone
        self.whole = cfg.whole_prompts
        # sequences the last schedule() admitted whose first token is due now (first_on_admit):
        # the caller, which knows the time, hands it to their sinks
        self.joined: list[Seq] = []

    def _rank_budgets(self) -> list[int] | None:
        """A fresh step's token budget per rank (None without per-rank budgets)."""
        return [self.rank_chunk] * len(self.pools) if self.rank_chunk else None

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
