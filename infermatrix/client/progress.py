"""A periodic one-line progress report on stderr (no tqdm: it is not a dependency, and a bar
redrawn on every completion costs the event loop time that belongs to timestamps)."""

from __future__ import annotations

import sys
from time import perf_counter

INTERVAL_S = 5.0


class Progress:
    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled
        self.completed = 0
        self.failed = 0
        self._t0 = 0.0
        self._next = 0.0

    def start(self, t0: float) -> None:
        self._t0 = t0
        self._next = t0 + INTERVAL_S

    def done(self, ok: bool) -> None:
        if ok:
            self.completed += 1
        else:
            self.failed += 1
        if self.enabled:
            now = perf_counter()
            if now >= self._next:
                self._next = now + INTERVAL_S
                self._print(now)

    def close(self) -> None:
        if self.enabled:
            self._print(perf_counter())

    def _print(self, now: float) -> None:
        n = self.completed + self.failed
        sys.stderr.write(
            f"[bench] {n}/{self.total} requests ({self.failed} failed), {now - self._t0:.0f} s\n"
        )
        sys.stderr.flush()
