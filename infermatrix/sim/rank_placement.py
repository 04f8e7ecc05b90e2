"""The busiest attention-DP rank under a random placement: the expected maximum load of d
ranks when n requests land on them uniformly at random (each rank capped at its batch limit).
The step model times a step by that rank (operators.StepModel._busiest_rank)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

EXACT_LOADS = 256


@lru_cache(maxsize=4096)
def expected_max_load(n: int, d: int, cap: int = 0) -> float:
    """Expected load of the busiest of ``d`` ranks when ``n`` requests land on them uniformly
    at random, each rank running at most ``cap`` of them (0: no cap), i.e. E[min(max, cap)].
    Exact up to EXACT_LOADS requests by Poissonisation (with X_i ~ Poisson(n / d),
    P(max <= m) = P(sum X_i = n, every X_i <= m) / P(sum X_i = n)); beyond, the normal
    approximation lam + sqrt(2 lam (1 - 1/d) ln d), capped."""
    top = min(n, cap) if cap > 0 else n
    if n <= 0 or d <= 1:
        return float(max(top, 0))
    lam = n / d
    if n > EXACT_LOADS:
        return min(float(top), lam + math.sqrt(2.0 * lam * (1.0 - 1.0 / d) * math.log(d)))
    whole = math.exp(n * math.log(n) - n - math.lgamma(n + 1))  # P(Poisson(n) = n)
    m = -(-n // d)  # E[min(max, top)] = sum over m < top of P(max > m), 1 below ceil(n/d)
    if m >= top:
        return float(top)
    out = float(m)
    while m < top:
        k = np.arange(m + 1)
        pmf = np.exp(k * math.log(lam) - lam - np.array([math.lgamma(i + 1) for i in k]))
        total = np.array([1.0])
        for _ in range(d):
            total = np.convolve(total, pmf)[: n + 1]
        tail = 1.0 - min(1.0, total[n] / whole) if len(total) > n else 1.0
        if tail < 1e-9:
            break
        out += tail
        m += 1
    return float(out)
