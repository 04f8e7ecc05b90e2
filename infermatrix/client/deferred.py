"""Parse received answers when the event loop has time, in short slices, never in a burst.

Receiving only stamps and stores each piece of body (request.py). Turning the pieces into events
(SSE split, JSON, accounting) costs more than receiving them, and a run's requests tend to end
together: parsing each answer the moment it ends would hold the loop for the whole wave, and
every read that arrives meanwhile (the next wave's first tokens) would be stamped late by it.

So work is queued here and done one slice at a time (``SLICE_S`` of parsing, then the loop
takes in the reads that arrived): a stream still being received, every ``request.DRAIN_PIECES``
pieces, and an answer that has ended. (``request.DRAIN_BYTES`` pending in one stream is parsed
at once, on the receive path: memory stays small whatever the answer's length.) When more
than ``BACKLOG_BYTES`` wait, an answer is parsed at once: on an overloaded client memory stays
bounded, and lateness then shows up as receive lag, where it belongs."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .records import RequestRecord

SLICE_S = 0.0005  # parse for at most this long before the loop reads again
BACKLOG_BYTES = 64 << 20


class _Exchange(Protocol):
    """What the parser uses of one response (``request._Exchange``), named here so this module
    need not import request.py, which hands it the exchanges."""

    pending: int  # bytes received and not yet parsed

    def complete(self) -> RequestRecord: ...

    def drain_later(self) -> None: ...


class DeferredParser:
    def __init__(self, on_complete: Callable[[RequestRecord], None] | None = None) -> None:
        # (exchange, answer ended, bytes pending when queued)
        self._queue: deque[tuple[_Exchange, bool, int]] = deque()
        self._backlog = 0  # bytes waiting in the queue
        self._scheduled = False
        self._on_complete = on_complete

    def stream(self, ex: _Exchange) -> None:
        """A stream still being received holds enough to be worth parsing."""
        self._push(ex, ended=False)

    def ended(self, ex: _Exchange) -> None:
        """The answer ended (or failed): parse what is left and classify it."""
        self._push(ex, ended=True)

    def finish(self) -> None:
        """Parse everything still queued (the run is over: nothing is being stamped)."""
        while self._queue:
            self._run_one()

    def _push(self, ex: _Exchange, ended: bool) -> None:
        pending = ex.pending
        if self._backlog + pending > BACKLOG_BYTES:
            self._parse(ex, ended)  # overloaded: keep memory bounded, pay the time now
            return
        self._queue.append((ex, ended, pending))
        self._backlog += pending
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._slice)

    def _slice(self) -> None:
        self._scheduled = False
        stop = perf_counter() + SLICE_S
        while self._queue:
            self._run_one()
            if perf_counter() >= stop:
                break
        if self._queue:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._slice)  # after the reads now due

    def _run_one(self) -> None:
        ex, ended, pending = self._queue.popleft()
        self._backlog -= pending
        self._parse(ex, ended)

    def _parse(self, ex: _Exchange, ended: bool) -> None:
        if ended:
            rec = ex.complete()
            if self._on_complete is not None:
                self._on_complete(rec)
        else:
            ex.drain_later()
