"""Block-based KV cache with prefix sharing and LRU eviction.

KV lives in fixed-size blocks. A full block of prompt tokens is identified by a chain hash (its
tokens and everything before it), so two prompts with the same prefix share blocks. A block
nobody references stays cached (evictable, least recently used first) until its memory is needed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from itertools import takewhile
from operator import countOf


def chain_hashes(tokens: Sequence[Hashable], block_size: int) -> tuple[int, ...]:
    """One hash per full block; each covers the block's tokens and the hash before it."""
    out: list[int] = []
    parent = 0
    for start in range(0, len(tokens) - block_size + 1, block_size):
        parent = hash((parent, tuple(tokens[start:start + block_size])))
        out.append(parent)
    return tuple(out)


class BlockPool:
    def __init__(self, num_blocks: int, block_size: int, caching: bool = True):
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.caching = caching
        # Sparse on purpose: a large-memory deployment has tens of millions of blocks, of which
        # a run touches few. Blocks >= _fresh were never used.
        self._fresh = 0
        self._free: list[int] = []  # used before, now free and uncached
        self._lru: OrderedDict[int, None] = OrderedDict()  # cached, unreferenced: evictable
        # block -> references, kept only for blocks that hold a prompt block (shareable) or held
        # one since the last reset; any other block in use has exactly one reference, its
        # sequence's, and is absent (so unshared KV costs no bookkeeping per block)
        self._refs: dict[int, int] = {}
        self._hash_of: dict[int, int] = {}  # block -> hash of the prompt block it holds
        self._block_of: dict[int, int] = {}  # hash -> block
        self.query_tokens = 0  # prefix-cache lookups, in tokens (for the hit rate)
        self.hit_tokens = 0

    @property
    def free_blocks(self) -> int:
        return self.num_blocks - self._fresh + len(self._free) + len(self._lru)

    @property
    def used_blocks(self) -> int:
        return self.num_blocks - self.free_blocks

    @property
    def usage(self) -> float:
        return self.used_blocks / self.num_blocks if self.num_blocks else 0.0

    def match(self, hashes: Sequence[int]) -> list[int]:
        """The cached blocks of the longest cached prefix (not yet referenced)."""
        if not self.caching:
            return []
        block_of = self._block_of  # (C-level loops: this runs per rank at every placement)
        return list(map(block_of.__getitem__, takewhile(block_of.__contains__, hashes)))

    def probe(self, hashes: Sequence[int]) -> int:
        """Cached prefix length in tokens, without touching anything (for the router)."""
        return len(self.match(hashes)) * self.block_size

    def record_lookup(self, query: int, hit: int) -> None:
        self.query_tokens += query
        self.hit_tokens += hit

    def free_after_acquire(self, blocks: Sequence[int]) -> int:
        """``free_blocks`` once ``blocks`` (from ``match``) are acquired: those nobody
        references leave the evictable set."""
        refs = self._refs
        return self.free_blocks - countOf(map(refs.get, blocks), None)  # (counts are >= 1)

    def acquire(self, blocks: Sequence[int]) -> None:
        """Reference cached blocks (from ``match``: each holds a prompt block, so is counted)."""
        refs = self._refs
        for b in blocks:
            n = refs.get(b, 0)
            if n == 0:
                self._lru.pop(b, None)
            refs[b] = n + 1

    def allocate(self, n: int) -> list[int] | None:
        """``n`` fresh blocks, evicting least recently used cached ones; None if too few."""
        if n > self.free_blocks:
            return None
        free = self._free
        take = min(n, len(free))
        out = free[len(free) - take:][::-1]  # the order popping one at a time gives
        del free[len(free) - take:]
        fresh = min(n - take, self.num_blocks - self._fresh)
        out.extend(range(self._fresh, self._fresh + fresh))
        self._fresh += fresh
        for _ in range(n - take - fresh):
            b, _ = self._lru.popitem(last=False)
            h = self._hash_of.pop(b, None)
            if h is not None and self._block_of.get(h) == b:
                del self._block_of[h]
            out.append(b)
        return out  # each referenced once, by the caller: implicit (see _refs)

    def commit(self, block: int, h: int) -> None:
        """A block now holds the KV of a full prompt block with hash ``h``: share it (unless
        another block shares that prompt block already)."""
        self.commit_many((block,), (h,))

    def commit_many(self, blocks: Sequence[int], hashes: Sequence[int]) -> None:
        """``commit`` of each block with its hash, in order."""
        if not self.caching:
            return
        block_of, hash_of, refs = self._block_of, self._hash_of, self._refs
        for block, h in zip(blocks, hashes, strict=True):
            if h not in block_of:
                block_of[h] = block
                hash_of[block] = h
                refs.setdefault(block, 1)

    def release(self, blocks: Sequence[int]) -> None:
        # release the tail first so a prompt's last blocks are evicted before its first ones
        refs = self._refs
        tail_first = blocks[::-1]
        if not refs or not any(map(refs.__contains__, tail_first)):
            # the common case (no block shared, none holding a prompt block): in bulk
            self._free.extend(tail_first)
            return
        hash_of, lru, free = self._hash_of, self._lru, self._free
        for b in tail_first:
            n = refs.get(b, 1) - 1
            if n:
                refs[b] = n
                continue
            refs.pop(b, None)
            if b in hash_of:
                lru[b] = None
            else:
                free.append(b)

    def reset(self) -> int:
        """Forget every cached prefix (blocks in use keep their KV but are shared no more)."""
        dropped = len(self._block_of)
        self._free.extend(self._lru)
        self._lru.clear()
        self._hash_of.clear()  # blocks in use return to the free list when released
        self._block_of.clear()
        return dropped


class RankPools:
    """The KV pools of one instance's attention-DP ranks, seen as one (for metrics, the
    router's prefix probe and cache resets). Each rank holds the KV of its own sequences."""

    def __init__(self, pools: Sequence[BlockPool]):
        self.ranks = list(pools)

    def _sum(self, name: str) -> int:
        return sum(getattr(p, name) for p in self.ranks)

    num_blocks = property(lambda self: self._sum("num_blocks"))
    free_blocks = property(lambda self: self._sum("free_blocks"))
    used_blocks = property(lambda self: self.num_blocks - self.free_blocks)
    query_tokens = property(lambda self: self._sum("query_tokens"))  # prefix-cache lookups
    hit_tokens = property(lambda self: self._sum("hit_tokens"))

    @property
    def usage(self) -> float:
        total = self.num_blocks
        return self.used_blocks / total if total else 0.0

    def probe(self, hashes: Sequence[int]) -> int:
        return max(p.probe(hashes) for p in self.ranks)

    def reset(self) -> int:
        return sum(p.reset() for p in self.ranks)
