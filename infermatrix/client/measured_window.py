"""When a closed-loop level measures: the window after the warm-up and the lanes' cold
first requests."""

from __future__ import annotations

import math

from .level_records import LevelPlan

# the measured window opens at most this many durations after the warm-up, however long the
# lanes' first answers take (each is bounded by the request timeout as well)
WARM_START_LIMIT = 10


class MeasuredWindow:
    """When a level measures: from ``warmup_s`` after its start or, when lanes start
    mid-session, from the moment the last lane's first request has its first token (their cold
    contexts are prefilled: at a few thousand agents that is minutes of prefill), whichever is
    later, but no later than ``WARM_START_LIMIT × duration_s`` after the warm-up; it lasts
    ``duration_s``. Times are absolute (``perf_counter`` or virtual). The client learns each
    first token as its answer streams (a few tokens later, when they are parsed). Until every
    lane has its first token, the start is not known: it is taken as the latest possible, so
    lanes go on sending, and which turns fell inside is decided once it is (``inside``)."""

    def __init__(self, t0: float, plan: LevelPlan) -> None:
        self.earliest = t0 + plan.warmup_s
        self.latest = self.earliest + WARM_START_LIMIT * plan.duration_s
        self.duration = plan.duration_s
        self.waiting = plan.agents if plan.mid_session else 0
        self.last_first_token = -math.inf
        self.opened: float | None = None if self.waiting else self.earliest

    def first_token(self, at: float) -> None:
        """A lane's first request had its first token at ``at`` (or ended without one then):
        called once a lane."""
        if self.waiting <= 0:  # (the window did not wait for first tokens)
            return
        self.waiting -= 1
        self.last_first_token = max(self.last_first_token, at)
        if self.waiting == 0:
            self.opened = min(max(self.earliest, self.last_first_token), self.latest)

    def inside(self, decided: float) -> bool:
        """Whether a turn decided (sent) at ``decided`` is measured."""
        return self.start <= decided < self.stop

    @property
    def start(self) -> float:
        return self.latest if self.opened is None else self.opened

    @property
    def stop(self) -> float:
        return self.start + self.duration
