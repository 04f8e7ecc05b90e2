"""Event kernels: the one place where real and virtual time differ.

Engines schedule callbacks at model times. The virtual kernel runs them back to back, jumping its
clock; the real-time kernel sleeps until each one is due (model time / time_scale). A real-time
event that fires late still runs at its model time, so steps never drift: the next step starts
where the last one ended, not when the event loop got round to it.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Kernel:
    virtual: bool = True

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[..., Any], tuple[Any, ...]]] = []
        self._count = 0
        self.now = 0.0

    def call_at(self, t: float, fn: Callable[..., Any], *args: Any) -> None:
        self._count += 1
        heapq.heappush(self._heap, (max(t, self.now), self._count, fn, args))

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.call_at(self.now, fn, *args)

    def next_time(self) -> float:
        return self._heap[0][0] if self._heap else math.inf

    def _run_one(self) -> None:
        t, _, fn, args = heapq.heappop(self._heap)
        if t > self.now:
            self.now = t
        fn(*args)


class VirtualKernel(Kernel):
    virtual = True

    def run(self, until: float = math.inf) -> None:
        heap = self._heap
        while heap and heap[0][0] <= until:
            self._run_one()


class RealtimeKernel(Kernel):
    virtual = False

    def __init__(self, time_scale: float = 1.0):
        super().__init__()
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.time_scale = time_scale
        self._loop: asyncio.AbstractEventLoop | None = None
        self._t0 = 0.0
        self._wake: asyncio.Event | None = None

    def start(self) -> asyncio.Task[None]:
        """Start the kernel on the running event loop; returns its task."""
        self._loop = asyncio.get_running_loop()
        self._t0 = self._loop.time()
        self._wake = asyncio.Event()
        return self._loop.create_task(self._run())

    def model_now(self) -> float:
        """Model time now (wall seconds since start × time_scale), never behind the clock."""
        assert self._loop is not None, "kernel not started"
        return max(self.now, (self._loop.time() - self._t0) * self.time_scale)

    def wall_of(self, t: float) -> float:
        """The event loop time at which model time ``t`` falls."""
        return self._t0 + t / self.time_scale

    def call_at(self, t: float, fn: Callable[..., Any], *args: Any) -> None:
        super().call_at(t, fn, *args)
        if self._wake is not None:
            self._wake.set()

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn`` as soon as possible, at the current model time (from outside events)."""
        self.call_at(self.model_now(), fn, *args)

    async def _run(self) -> None:
        assert self._loop is not None and self._wake is not None
        loop, wake, heap = self._loop, self._wake, self._heap
        while True:
            wake.clear()
            if not heap:
                await wake.wait()
                continue
            due = self.wall_of(heap[0][0])
            if due <= loop.time():
                try:
                    self._run_one()
                except Exception:  # one bad callback must not stop every engine
                    log.exception("simulated engine event failed")
                continue
            handle = loop.call_at(due, wake.set)
            await wake.wait()
            handle.cancel()
