"""simulate(stop_at=…): nothing is sent once the stop time has passed; what was sent finishes."""

from __future__ import annotations

from sim_helpers import config

from infermatrix.sim import SimRequest, simulate
from infermatrix.sim.virtual import NOT_SENT


def _chain(n: int, delay: float) -> list[SimRequest]:
    """One closed-loop lane: each request follows the previous one after ``delay``."""
    reqs = [SimRequest(200, 50)]
    reqs += [SimRequest(200, 50, after=i, delay=delay) for i in range(n - 1)]
    return reqs


def test_requests_ready_after_the_stop_are_not_sent() -> None:
    cfg = config("H200", tp=2)
    full = simulate(cfg, _chain(40, 0.5))
    ends = sorted(r.finished_at for r in full.results)
    stop = ends[9] + 0.25  # inside the gap after the tenth request finished
    run = simulate(cfg, _chain(40, 0.5), stop_at=stop)
    sent = [r for r in run.results if r.error is None]
    unsent = [r for r in run.results if r.error == NOT_SENT]
    assert len(sent) == 10 and len(unsent) == 30
    assert all(r.sent_at >= stop for r in unsent)
    # what was sent is timed exactly as without a stop (the stop only withholds later sends)
    assert [(r.sent_at, r.finished_at) for r in sent] == [
        (r.sent_at, r.finished_at) for r in full.results[:10]
    ]


def test_a_request_in_flight_at_the_stop_runs_to_its_end() -> None:
    cfg = config("H200", tp=2)
    full = simulate(cfg, _chain(5, 0.0))
    first = full.results[0]
    run = simulate(cfg, _chain(5, 0.0), stop_at=(first.sent_at + first.finished_at) / 2)
    assert run.results[0].error is None and run.results[0].finished_at == first.finished_at
    assert [r.error for r in run.results[1:]] == [NOT_SENT] * 4
