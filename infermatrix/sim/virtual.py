"""Virtual time: run a workload through the simulated deployment with no sleeping.

The same scheduler, roofline, prefix cache and router as the HTTP server run on a kernel whose
clock jumps from event to event. ``simulate`` plays a list of requests (open-loop arrival times,
a closed-loop concurrency cap, and multi-turn dependencies) and returns per-request timings in
model seconds, as a benchmark client on a real server would have measured them.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .clock import VirtualKernel
from .config import SimConfig
from .engine import Deployment, EngineRequest, RequestRecord


def statistic(values: Sequence[float] | np.ndarray, name: str) -> float:
    """``name`` of ``values``: median, mean, or pNN as bench_serving computes it (numpy's
    interpolated percentile); nan for none."""
    if not len(values):
        return float("nan")
    if name == "median":
        return statistics.median(values)
    if name == "mean":
        return statistics.fmean(values)
    return float(np.percentile(values, float(name[1:])))


@dataclass(frozen=True)
class SimRequest:
    prompt_tokens: int
    max_tokens: int
    arrival: float = 0.0
    """earliest send time (model seconds); with ``concurrency`` it also waits for a free slot"""
    hashes: tuple[int, ...] = ()
    """prefix-cache identity of the prompt's full blocks (see segment_hashes); () = unique"""
    session: str | None = None
    """router affinity key (conversation id)"""
    after: int | None = None
    """index of a request that must finish first (the previous turn of a conversation)"""
    delay: float = 0.0
    """seconds between ``after`` finishing and this request being ready (tool / think time)"""
    warm_tokens: int = 0
    """tokens at the head of the prompt computed before the run (a conversation joined under
    way, as in a steady state): held in KV and cached from admission on, not prefilled"""


NOT_SENT = "not sent: ready after the stop time"


@dataclass
class SimResult:
    index: int
    sent_at: float
    prompt_tokens: int
    max_tokens: int
    completion_tokens: int = 0
    cached_tokens: int = 0
    first_token_at: float | None = None
    finished_at: float | None = None
    token_times: Sequence[float] = ()
    """model time of every generated token (absolute, like sent_at)"""
    preemptions: int = 0
    instance: str = ""
    error: str | None = None

    @property
    def ttft(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.sent_at

    @property
    def e2el(self) -> float | None:
        return None if self.finished_at is None else self.finished_at - self.sent_at

    @property
    def tpot(self) -> float | None:
        if self.first_token_at is None or self.finished_at is None or self.completion_tokens < 2:
            return None
        return (self.finished_at - self.first_token_at) / (self.completion_tokens - 1)

    def itl(self) -> list[float]:
        """Gaps between token times (0 for tokens that arrived in the same chunk)."""
        return np.diff(np.asarray(self.token_times, dtype=np.float64)).tolist()


@dataclass
class SimRun:
    results: list[SimResult]
    duration: float
    """model seconds from the first send to the last token"""
    wall_seconds: float
    steps: int
    preemptions: int
    config: dict[str, Any] = field(default_factory=dict)

    def median(self, metric: str) -> float:
        return statistic(self.values(metric), "median")

    def values(self, metric: str) -> list[float]:
        """``metric`` (a SimResult attribute: ttft, tpot, e2el) of every request that has it."""
        return [v for r in self.results if (v := getattr(r, metric)) is not None]

    @property
    def output_throughput(self) -> float:
        return sum(r.completion_tokens for r in self.results) / self.duration if self.duration else 0.0


def simulate(config: SimConfig, requests: Sequence[SimRequest], *, concurrency: int | None = None,
             record_token_times: bool = True, seed: int = 0, streaks: bool = True,
             stop_at: float | None = None) -> SimRun:
    """Serve ``requests`` on the deployment ``config`` describes, in virtual time.

    A request is ready at its arrival time (or ``delay`` after the request it follows finished)
    and is sent when fewer than ``concurrency`` requests are in flight (None: no cap), in the
    order requests became ready. Every request generates exactly ``max_tokens`` tokens.
    ``streaks=False`` applies every decode step on its own (slower; the same timings except
    under speculative decoding, where streaks assume the mean acceptance for step times).
    ``stop_at``: a request that becomes ready at or after this time is never sent, as a
    client's closed loop sends no turn after its measuring window closes; its result has
    ``sent_at`` = when it became ready and ``error`` = ``NOT_SENT``. What was sent still runs
    to its end.
    """
    wall0 = time.perf_counter()
    kernel = VirtualKernel()
    deployment = Deployment(config, kernel, record_times=record_token_times, seed=seed,
                            streaks=streaks)
    results: list[SimResult | None] = [None] * len(requests)
    children: dict[int, list[int]] = {}
    ready: deque[int] = deque()
    in_flight = 0

    def pump() -> None:
        nonlocal in_flight
        while ready and (concurrency is None or in_flight < concurrency):
            i = ready.popleft()
            req = requests[i]
            res = SimResult(i, kernel.now, req.prompt_tokens, req.max_tokens)
            results[i] = res
            ereq = EngineRequest(req.prompt_tokens, req.max_tokens, req.hashes, req.session,
                                 req.warm_tokens)
            reason = deployment.reject_reason(ereq)
            if reason:
                res.error = reason
                release_children(i)
                continue
            in_flight += 1
            deployment.submit(ereq, on_done=lambda rec, i=i: on_done(i, rec))

    def on_done(i: int, rec: RequestRecord) -> None:
        nonlocal in_flight
        res = results[i]
        assert res is not None
        res.completion_tokens = rec.completion_tokens
        res.cached_tokens = rec.cached_tokens
        res.first_token_at = rec.first_token_at
        res.finished_at = rec.finished_at
        res.token_times = rec.token_times.array() if rec.token_times is not None else ()
        res.preemptions = rec.preemptions
        res.instance = rec.instance
        in_flight -= 1
        release_children(i)
        pump()

    def release_children(i: int) -> None:
        for child in children.pop(i, ()):
            kernel.call_at(max(requests[child].arrival, kernel.now + requests[child].delay),
                           make_ready, child)

    def make_ready(i: int) -> None:
        if stop_at is not None and kernel.now >= stop_at:
            results[i] = SimResult(i, kernel.now, requests[i].prompt_tokens,
                                   requests[i].max_tokens, error=NOT_SENT)
            release_children(i)  # the rest of its chain is later still: not sent either
            return
        ready.append(i)
        pump()

    for i, req in enumerate(requests):
        if req.after is None:
            kernel.call_at(req.arrival, make_ready, i)
        else:
            if not 0 <= req.after < len(requests) or req.after == i:
                raise ValueError(f"request {i}: 'after' must name another request, got {req.after}")
            children.setdefault(req.after, []).append(i)
    kernel.run()
    for i, r in enumerate(results):
        if r is None:
            r = results[i] = SimResult(i, kernel.now, requests[i].prompt_tokens, requests[i].max_tokens)
            r.error = "never sent: the request it follows did not finish"
        elif r.error is None and r.finished_at is None:
            r.error = "never finished: the engine could not schedule it (check the config)"
    done = [r for r in results if r is not None]
    starts = [r.sent_at for r in done]
    ends = [r.finished_at for r in done if r.finished_at is not None]
    cores = [i.core for i in deployment.all_instances]
    return SimRun(
        results=done,
        duration=(max(ends) - min(starts)) if ends else 0.0,
        wall_seconds=time.perf_counter() - wall0,
        steps=sum(c.steps_total for c in cores),
        preemptions=sum(c.preemptions_total for c in cores),
        config=config.summary(),
    )


def segment_hashes(segments: Sequence[tuple[Hashable, int]], block_size: int) -> tuple[int, ...]:
    """Prefix-cache identity of a prompt made of named segments, without materialising tokens.

    ``segments`` is [(identity, n_tokens), ...] in prompt order: e.g. [("system-A", 2000),
    (("user", 17), 500)]. Two prompts share cached blocks exactly as far as their segment lists
    agree (a block straddling a difference is not shared). Use the config's block_size.
    """
    hasher = SegmentHasher(block_size)
    for ident, n in segments:
        hasher.add(ident, n)
    return hasher.hashes


class SegmentHasher:
    """``segment_hashes`` of a prompt that grows: fed its segments in order, a few at a time,
    it gives the hashes of everything fed so far (a conversation's next turn extends the last
    one's prompt, so each segment is hashed once, not once per later turn)."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self._out: list[int] = []
        self._parent = 0
        self._pieces: list[tuple[Hashable, int, int]] = []
        self._filled = 0

    def add(self, ident: Hashable, n: int) -> None:
        bs = self.block_size
        offset = 0
        while offset < n:
            take = min(n - offset, bs - self._filled)
            self._pieces.append((ident, offset, take))
            offset += take
            self._filled += take
            if self._filled == bs:
                self._parent = hash((self._parent, tuple(self._pieces)))
                self._out.append(self._parent)
                self._pieces = []
                self._filled = 0

    @property
    def hashes(self) -> tuple[int, ...]:
        return tuple(self._out)

    @property
    def count(self) -> int:
        """How many hashes there are so far (``hashes`` later starts with that many of them)."""
        return len(self._out)
