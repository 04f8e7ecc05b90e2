"""Forked worker pools (infermatrix/workers.py): whatever the parent did with its signals, a
worker dies of SIGTERM and SIGHUP and ignores Ctrl-C. A worker that inherited a sweep's "ignore
SIGTERM" (what its handler leaves after a first signal) could not be stopped by
Pool.terminate(), and the pool's join waited forever: a real hang of the test suite."""

from __future__ import annotations

import signal

from infermatrix.workers import fork_pool


def _dispositions(_: int) -> tuple[object, object, object]:
    return (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP),
            signal.getsignal(signal.SIGINT))


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
    assert set(seen) == {(signal.SIG_DFL, signal.SIG_DFL, signal.SIG_IGN)}


def test_the_initializer_still_runs() -> None:
    with fork_pool(2, _set_flag, (7,)) as pool:
        assert pool.map(_flag_of, range(4)) == [7, 7, 7, 7]
