"""Forked worker pools whose workers leave stopping to the process that forked them.

A forked worker inherits its parent's signal handlers. The sweep's turn SIGTERM into an
exception and then ignore it (launch/job.py), so a worker forked after that could neither be
stopped by ``Pool.terminate()`` (its SIGTERM) nor die of its first one: the pool's join would
wait forever. Here every worker ignores Ctrl-C (it reaches the whole process group; the parent
decides) and dies of SIGTERM and SIGHUP. Those two are blocked while the pool forks, and a
worker unblocks them only once its own dispositions are set: a SIGTERM that reaches a worker
before then (a loaded machine can take long to run a fresh process; a pool may be terminated
at once) stays pending and kills it then, instead of being lost to the inherited "ignore".
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from multiprocessing.pool import Pool
from typing import Any

# the signals that stop a sweep (launch/job.py turns them into an exception) and a worker
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def fork_pool(workers: int, initializer: Callable[..., None] | None = None,
              initargs: tuple[Any, ...] = ()) -> Pool:
    """A pool of ``workers`` forked processes (they share what the parent has loaded)."""
    # blocked in this thread while forking: the pool's own threads, which fork replacements
    # for workers that end, are made now and keep this mask
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        return multiprocessing.get_context("fork").Pool(
            workers, initializer=_init_worker, initargs=(initializer, initargs))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _init_worker(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    # a SIGTERM pending since the fork is delivered now
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if initializer is not None:
        initializer(*initargs)
