"""Forked worker pools (infermatrix/workers.py): whatever the parent did with its signals, a
worker dies of SIGTERM and SIGHUP and ignores Ctrl-C. A worker that inherited a sweep's "ignore
SIGTERM" (what its handler leaves after a first signal) could not be stopped by
Pool.terminate(), and the pool's join waited forever: a real hang of the test suite."""

from __future__ import annotations

import signal

from infermatrix.workers import fork_pool


def _dispositions(_: int) -> tuple[object, object, object, bool]:
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP),
            signal.getsignal(signal.SIGINT), signal.SIGTERM in blocked or signal.SIGHUP in blocked)


def _set_flag(value: int) -> None:
    global _flag
    _flag = value


def _flag_of(_: int) -> int:
    return _flag


_flag = 0


def test_workers_die_of_sigterm_whatever_the_parent_ignores() -> None:
    saved = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)]
    try:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, lambda *_: None)
        with fork_pool(2) as pool:
            seen = pool.map(_dispositions, range(4))
    finally:
        signal.signal(signal.SIGTERM, saved[0])
        signal.signal(signal.SIGHUP, saved[1])
    assert set(seen) == {(signal.SIG_DFL, signal.SIG_DFL, signal.SIG_IGN, False)}
    # the parent's mask is as it was (the pool blocks them only while it forks)
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_a_sigterm_before_the_worker_set_its_handlers_is_not_lost() -> None:
    """A worker that takes long to start (a loaded machine) while the parent ignores SIGTERM:
    the pool is terminated before the worker ran a line of its own. It must still die (the
    signal waits, blocked, until the worker's handlers are set), or the join hangs."""
    import multiprocessing
    import os
    import time

    import infermatrix.workers as workers

    saved = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    real_init = workers._init_worker

    def slow_init(*args: object) -> None:  # the window between the fork and the handlers
        time.sleep(1.0)
        real_init(*args)  # type: ignore[arg-type]

    workers._init_worker = slow_init  # type: ignore[assignment]
    try:
        pool = fork_pool(1)
        (worker,) = multiprocessing.active_children()
        os.kill(worker.pid, signal.SIGTERM)  # during the second it sleeps
        deadline = time.monotonic() + 30
        while worker.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        lost = worker.is_alive()
        if lost:  # it would never end: the pool's join would hang
            os.kill(worker.pid, signal.SIGKILL)
        pool.terminate()
        pool.join()
        assert not lost, "the SIGTERM was lost"
    finally:
        workers._init_worker = real_init  # type: ignore[assignment]
        signal.signal(signal.SIGTERM, saved)


def test_the_initializer_still_runs() -> None:
    with fork_pool(2, _set_flag, (7,)) as pool:
        assert pool.map(_flag_of, range(4)) == [7, 7, 7, 7]
