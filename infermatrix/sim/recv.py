"""When an engine takes in new requests: SGLang's ``--scheduler-recv-interval N``.

SGLang's scheduler polls its input for new requests at the start of a loop iteration only once
the steps since it last did weigh ``N`` (``SchedulerRecvSkipper``): a decode (or verify) step
weighs 1, any other step (one that prefills) 1,000, so requests are taken in right after a
prefill and otherwise every ``N`` decode steps; an idle loop counts 1 an iteration and spins,
so an idle engine takes them at once. ``N = 1`` (the default) polls every iteration. Launch
scripts set it to save host time at large batches (InferenceX's B200 and B300 SGLang scripts:
10 below concurrency 16, 30 from it); the cost is TTFT: a request arriving during decode waits
up to ``N`` decode steps before it is even scheduled.

The counter is advanced a whole decode phase at a time (``advance``), and a phase that a new
request arrives in ends at the first step after which it would be taken in
(``first_receive``), so phases and single steps give the same admissions.
"""

from __future__ import annotations


class RecvSkipper:
    """The weight of the steps since new requests were last taken in, against ``every``."""

    __slots__ = ("every", "count")

    def __init__(self, every: int) -> None:
        self.every = max(1, every)
        self.count = 0

    @property
    def always(self) -> bool:
        """Whether every iteration takes new requests in (nothing is ever held back)."""
        return self.every <= 1

    def _after_first(self, first_prefills: bool) -> int:
        """The count after a phase's first step (0: requests were taken in after it)."""
        c = self.count + (self.every if first_prefills else 1)
        return 0 if c >= self.every else c

    def first_receive(self, first_prefills: bool, start: int) -> int:
        """The index of the first step, at or after ``start``, of a phase beginning now (its
        first step prefills or not; the rest decode) after which new requests are taken in."""
        c1 = self._after_first(first_prefills)
        if c1 == 0 and start <= 0:
            return 0
        first = self.every - c1  # the first such step after the phase's first one
        if start <= first:
            return first
        return first + -(-(start - first) // self.every) * self.every

    def advance(self, steps: int, first_prefills: bool) -> bool:
        """Count a finished phase of ``steps`` steps; whether requests were taken in after its
        last step."""
        c = self._after_first(first_prefills) + steps - 1
        if c >= self.every:
            c = (c - self.every) % self.every
        self.count = c
        return c == 0
