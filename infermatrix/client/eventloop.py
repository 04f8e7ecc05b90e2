"""Run the client's coroutines on uvloop where it is installed (the default on Linux).

uvloop reads sockets and dispatches ``data_received`` in C: per streamed event it costs a few
microseconds less than asyncio's selector loop, which at tens of thousands of events a second
is the difference between stamping a burst of events on time or late (tests/perf/
client_accuracy.py shows both). ``INFERMATRIX_EVENT_LOOP=asyncio`` chooses the standard loop."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    """The loop :func:`run` uses: "uvloop" or "asyncio"."""
    if os.environ.get("INFERMATRIX_EVENT_LOOP", "").strip().lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401, PLC0415 - optional: not on every platform
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """:func:`asyncio.run` on the loop :func:`loop_name` names (same signal handling)."""
    if loop_name() == "uvloop":
        import uvloop  # noqa: PLC0415

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(main)
    return asyncio.run(main)
