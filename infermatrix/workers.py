"""Forked worker pools whose workers leave stopping to the process that forked them.

A forked worker inherits its parent's signal handlers. The sweep's turn SIGTERM into an
exception and then ignore it (launch/job.py), so a worker forked after that could neither be
stopped by ``Pool.terminate()`` (its SIGTERM) nor die of its first one: the pool's join would
wait forever. Here every worker ignores Ctrl-C (it reaches the whole process group; the parent
decides) and dies of SIGTERM and SIGHUP.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from multiprocessing.pool import Pool
from typing import Any


def fork_pool(workers: int, initializer: Callable[..., None] | None = None,
              initargs: tuple[Any, ...] = ()) -> Pool:
    """A pool of ``workers`` forked processes (they share what the parent has loaded)."""
    return multiprocessing.get_context("fork").Pool(
        workers, initializer=_init_worker, initargs=(initializer, initargs))


def _init_worker(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    if initializer is not None:
        initializer(*initargs)
