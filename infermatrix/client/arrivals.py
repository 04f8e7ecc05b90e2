"""Arrival schedules as absolute deadlines (seconds after the benchmark start).

Deadlines are computed up front from their own seeded RNG, so the schedule does not depend on
how fast the client runs and never drifts the way chained relative sleeps do."""

from __future__ import annotations

import math
import random


def gamma_deadlines(n: int, rate: float, burstiness: float, rng: random.Random) -> list[float]:
    """``rate`` requests/s with gamma-distributed gaps (shape = burstiness; 1 = Poisson).

    Mean gap is 1/rate whatever the burstiness; lower burstiness = burstier. ``rate=inf`` sends
    everything at t=0 (then only --max-concurrency paces the run)."""
    if math.isinf(rate):
        return [0.0] * n
    scale = 1.0 / (rate * burstiness)
    out: list[float] = []
    t = 0.0
    for i in range(n):
        if i:
            t += rng.gammavariate(burstiness, scale)
        out.append(t)
    return out
