"""The deferred parser parses between reads in short slices, and loses nothing at the end."""

from __future__ import annotations

import asyncio
import time

from infermatrix.client import deferred
from infermatrix.client.deferred import DeferredParser


class _SlowExchange:
    """Stands in for a received answer whose parsing takes a known time."""

    def __init__(self, cost_s: float) -> None:
        self.cost_s = cost_s
        self.pending = 1000
        self.completed = False
        self.drained = 0
        self.rec = object()

    def complete(self) -> object:
        end = time.perf_counter() + self.cost_s
        while time.perf_counter() < end:
            pass
        self.completed = True
        return self.rec

    def drain_later(self) -> None:
        self.drained += 1


def test_parsing_is_sliced_between_loop_iterations() -> None:
    async def main() -> tuple[list[int], int]:
        done: list[object] = []
        parser = DeferredParser(done.append)
        exs = [_SlowExchange(deferred.SLICE_S / 2) for _ in range(40)]
        for ex in exs:
            parser.ended(ex)
        progress = []
        for _ in range(200):  # each sleep(0) lets the loop run one more round of callbacks
            await asyncio.sleep(0)
            progress.append(sum(ex.completed for ex in exs))
            if progress[-1] == len(exs):
                break
        return progress, len(done)

    progress, reported = asyncio.run(main())
    assert progress[-1] == 40 and reported == 40
    # never the whole queue in one go: a slice stops after SLICE_S (each answer costs half of it)
    steps = [b - a for a, b in zip([0, *progress], progress, strict=False)]
    assert max(steps) <= 3, steps
    assert len([s for s in steps if s]) >= 10


def test_finish_parses_everything_left_in_order() -> None:
    async def main() -> list[object]:
        done: list[object] = []
        parser = DeferredParser(done.append)
        streaming = _SlowExchange(0)
        parser.stream(streaming)
        exs = [_SlowExchange(0) for _ in range(5)]
        for ex in exs:
            parser.ended(ex)
        parser.finish()  # before the loop ran any slice
        assert streaming.drained == 1
        assert all(ex.completed for ex in exs)
        return done

    done = asyncio.run(main())
    assert len(done) == 5


def test_an_overloaded_backlog_is_parsed_at_once(monkeypatch) -> None:
    monkeypatch.setattr(deferred, "BACKLOG_BYTES", 2500)

    async def main() -> list[bool]:
        parser = DeferredParser()
        exs = [_SlowExchange(0) for _ in range(4)]  # 1000 bytes each
        for ex in exs:
            parser.ended(ex)
        states = [ex.completed for ex in exs]  # no loop iteration has run yet
        parser.finish()
        return states

    assert asyncio.run(main()) == [False, False, True, True]
