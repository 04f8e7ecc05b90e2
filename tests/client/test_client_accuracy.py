"""Accuracy against server truth (acceptance): a separate server process stamps every event
with its send time and records each request's kernel arrival time; our median TTFT and TPOT
must be within 1 % of the server's truth at concurrency 1, 64 and 256.

The comparison is against server truth, never against wall-clock targets, so a slow machine
makes the run longer but not wrong. What the client measures is its own accuracy, not how a
busy machine shares its cores: where the OS allows it (root or CAP_SYS_NICE), client and server
run at real-time priority, so other processes on the box cannot preempt them. Up to two retries
absorb what is left; only on a provably contended box (load average > cores) without real-time
priority is a 1-2 % result a skip, not a failure.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "perf"))

from client_accuracy import Server, normal_priority, realtime, run_ours  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def realtime_priority() -> Iterator[bool]:
    """This process and the server it starts at real-time priority, where the OS allows it."""
    granted = realtime(True).startswith("real-time")
    yield granted
    if granted:
        normal_priority()


@pytest.fixture(scope="module")
def stamp_server(realtime_priority: bool) -> Iterator[Server]:
    srv = Server(ttft=0.2, tpot=0.04)  # started after the priority change: it inherits it
    yield srv
    srv.stop()


@pytest.mark.parametrize("conc", [1, 64, 256])
def test_median_ttft_and_tpot_within_1_percent_of_server_truth(
    stamp_server: Server, realtime_priority: bool, conc: int
) -> None:
    n = 5 if conc == 1 else 2 * conc
    errors = []
    for _ in range(3):
        r = run_ours(stamp_server, conc, n=n, out_len=32, warmups=conc)
        assert r.failed == 0
        ttft_err = abs(r.ttft_ms - r.truth_ttft_ms) / r.truth_ttft_ms
        tpot_err = abs(r.tpot_ms - r.truth_tpot_ms) / r.truth_tpot_ms
        errors.append((round(ttft_err, 4), round(tpot_err, 4), round(r.lag_p99_ms, 1)))
        if ttft_err < 0.01 and tpot_err < 0.01:
            return
    # Three misses. On a box whose run queue is longer than its cores (neighbours' test runs),
    # client and server are both starved of CPU: then only a gross error (> 2 %) is a failure.
    load = os.getloadavg()[0]
    contended = load > (os.cpu_count() or 1) and not realtime_priority
    best = min(errors, key=lambda e: max(e[0], e[1]))
    if contended and max(best[0], best[1]) < 0.02:
        pytest.skip(f"machine contended (load {load:.1f}): errors {errors} within 2 % only")
    pytest.fail(
        f"median TTFT/TPOT error vs server truth above 1 % (load {load:.1f}, "
        f"real-time priority: {realtime_priority}): {errors}"
    )
