"""The sequences of one engine instance and the KV blocks they hold, each in its attention-DP
rank's own pool: the queues, the per-rank counts and reservations, the counters for /metrics,
and the ways a sequence's blocks go back. Its full prompt blocks are shared in the prefix cache
as they are computed. When a running sequence needs a KV block and none is free, the most
recently admitted sequence of its rank is preempted: its blocks are freed and it will recompute
its context later (with prefix caching its computed blocks stay cached until evicted, so only
what was evicted). A finished sequence's blocks go back in running order.

The bottom layer of the scheduler (scheduler.py); admission.py admits on top of it.
"""

from __future__ import annotations

from collections import deque

from .config import SimConfig
from .perf import PerfModel
from .prefix_cache import BlockPool, RankPools
from .seq import Seq

# salt of the cache identities a preempted sequence gives its own blocks (see _keep_cached)
PREEMPTED = "preempted"


class KVResidency:
    """The running and waiting sequences and the KV blocks they hold, rank by rank."""

    def __init__(self, cfg: SimConfig, perf: PerfModel | None = None):
        self.cfg = cfg
        self.perf = perf or PerfModel(cfg)
        ranks = cfg.kv_ranks
        self.pools = [BlockPool(cfg.num_blocks // ranks, cfg.block_size, cfg.prefix_caching)
                      for _ in range(ranks)]
        self.pool = RankPools(self.pools)  # the instance's view (metrics, router, resets)
        self.rank_seqs = [0] * ranks  # running sequences per rank
        self.bs = cfg.block_size
        self.draft = cfg.spec_draft_tokens
        # expected accepted draft tokens per step (chain acceptance a + a² + … + a^k)
        a = cfg.spec_acceptance
        self.accept_mean = sum(a ** i for i in range(1, self.draft + 1))
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        # TensorRT-LLM GUARANTEED_NO_EVICT (reserve_to_completion): blocks reserved to
        # completion by the running sequences of each rank, against the rank's whole pool
        self.rank_reserved = [0] * ranks
        self.rank_blocks = cfg.num_blocks // ranks
        # counters for /metrics
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.preemptions_total = 0
        self.finished_total = 0
        self.steps_total = 0

    def blocks_needed(self, tokens: int) -> int:
        return -(-tokens // self.bs)

    def _last_on_rank(self, rank: int) -> Seq:
        running = self.running
        if len(self.pools) == 1:
            return running[-1]
        return next(s for s in reversed(running) if s.rank == rank)

    def _leave_rank(self, seq: Seq) -> None:
        self.rank_seqs[seq.rank] -= 1
        self.rank_reserved[seq.rank] -= seq.reserved
        seq.reserved = 0

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
