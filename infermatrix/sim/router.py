"""Router policies: which instance of a pool serves a request.

round_robin   next instance in turn
least_loaded  fewest requests running + waiting (trtllm load_balancing, vllm-router least-request)
cache_aware   longest cached prefix; least loaded when no instance holds one or when the best is
              overloaded (sglang-router cache_aware, trtllm kv_cache_aware, dynamo KV routing)
session       the same session id always lands on the same instance (trtllm conversation,
              X-Session-ID affinity); no id → least loaded
random        uniform, seeded
power_of_two  the less loaded of two random instances
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from typing import Protocol

from .errors import SimConfigError

ROUTER_POLICIES = ("round_robin", "least_loaded", "cache_aware", "session", "random", "power_of_two")
# router policy names as recipes spell them (sglang-router, vllm-router, trtllm, dynamo)
POLICY_ALIASES = {
    "round_robin": "round_robin", "roundrobin": "round_robin", "rr": "round_robin",
    "least_loaded": "least_loaded", "load_balancing": "least_loaded", "least_request": "least_loaded",
    "cache_aware": "cache_aware", "kv_cache_aware": "cache_aware", "kv": "cache_aware",
    "prefix_aware": "cache_aware",
    "session": "session", "conversation": "session", "consistent_hash": "session",
    "random": "random", "power_of_two": "power_of_two",
}


def canonical_policy(name: str) -> str:
    """The policy a recipe's name (or alias) for it means."""
    key = name.strip().lower().replace("-", "_")
    if key not in POLICY_ALIASES:
        raise SimConfigError(f"unknown router policy {name!r} (known: {', '.join(ROUTER_POLICIES)})")
    return POLICY_ALIASES[key]


# cache_aware gives up on its best match when that instance has this many more requests than
# the least loaded one (and this many times as many): a hot prefix must not pin all traffic.
BALANCE_ABS = 32
BALANCE_REL = 1.5


class Instance(Protocol):
    """What the router sees of one serving instance."""

    @property
    def load(self) -> int: ...

    def cached_prefix(self, hashes: Sequence[int]) -> int: ...


class Router:
    def __init__(self, policy: str, seed: int = 0):
        self.policy = policy
        self._next = 0
        self._rng = random.Random(seed)

    def pick(self, targets: Sequence[Instance], hashes: Sequence[int] = (), session: str | None = None) -> int:
        n = len(targets)
        if n == 1:
            return 0
        policy = self.policy
        if policy == "round_robin":
            self._next = (self._next + 1) % n
            return (self._next - 1) % n
        if policy == "random":
            return self._rng.randrange(n)
        if policy == "power_of_two":
            a, b = self._rng.sample(range(n), 2)
            return a if targets[a].load <= targets[b].load else b
        if policy == "session" and session:
            return zlib.crc32(session.encode()) % n
        least = min(range(n), key=lambda i: targets[i].load)
        if policy == "cache_aware" and hashes:
            best, best_len = least, 0
            for i, t in enumerate(targets):
                got = t.cached_prefix(hashes)
                if got > best_len or (got == best_len and got and t.load < targets[best].load):
                    best, best_len = i, got
            lo, hi = targets[least].load, targets[best].load
            if best_len and not (hi - lo > BALANCE_ABS and hi > BALANCE_REL * lo):
                return best
        return least
