"""A simulated server outlives no runner: with ``--parent-pid`` it watches the process that
started it and ends itself (SIGTERM, its default action) once that process is gone, so a runner
killed with ``kill -9`` leaves no server behind longer than one poll interval.

Polling, not ``prctl(PR_SET_PDEATHSIG)``: the death signal fires when the parent *thread* that
forked the child exits, and a runner may start servers from a worker thread that ends long
before the runner does.
"""

from __future__ import annotations

import os
import signal
import threading
import time

POLL_S = 0.5


def _gone(pid: int, direct: bool) -> bool:
    if direct:  # our parent: once it dies we are re-parented (to init or a subreaper)
        return os.getppid() != pid
    try:  # started through something else (a wrapper): is the process still there?
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def watch_parent(pid: int, poll_s: float = POLL_S) -> threading.Thread:
    """Start the watchdog thread; it sends this process SIGTERM when ``pid`` is gone."""
    direct = os.getppid() == pid

    def watch() -> None:
        while not _gone(pid, direct):
            time.sleep(poll_s)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="parent-watchdog", daemon=True)
    thread.start()
    return thread
