"""Worker processes that share one timed run (``--num-workers N``).

One asyncio process stamps honestly up to a limit (docs/client.md gives the measured rate).
Beyond it, requests are dealt round-robin to N processes; each gets an equal share of
``--max-concurrency`` and its own connection pool, opens its connections before the start,
and runs the same dispatcher against a **shared absolute t0** (perf_counter is the system-wide
monotonic clock on Linux, so stamps from all processes are on one time axis). The parent
merges the records; metrics are computed once, on the merged set.

Trade-off: a concurrency slot freed in one worker cannot serve another worker's queue, so a
closed-loop run is N independent loops of c/N — identical when requests are alike.
"""

from __future__ import annotations

import asyncio
import pickle
import struct
import sys
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from . import eventloop
from .config import BenchConfig
from .errors import ClientInputError
from .records import RequestRecord

if TYPE_CHECKING:
    from .records import Prepared

# the measured loop a worker runs: runner.timed_run, handed over by the parent (by reference:
# a worker imports it when it unpickles it), so this module never imports the runner
TimedRun = Callable[..., Awaitable[tuple[list[RequestRecord], float, float]]]

START_MARGIN_S = 0.05  # t0 is this far after every worker reported ready
READY_TIMEOUT_S = 120.0
_LEN = struct.Struct("!Q")


def split(cfg: BenchConfig, prepared: list[Prepared]) -> list[tuple[int | None, list[Prepared]]]:
    """Deal requests round-robin; split max_concurrency as evenly as possible."""
    n = cfg.num_workers
    if cfg.max_concurrency is not None:
        n = min(n, cfg.max_concurrency)
    n = max(1, min(n, len(prepared)))
    shards = []
    for i in range(n):
        conc = None
        if cfg.max_concurrency is not None:
            conc = cfg.max_concurrency // n + (1 if i < cfg.max_concurrency % n else 0)
        shards.append((conc, prepared[i::n]))
    return shards


async def run_in_workers(
    cfg: BenchConfig, prepared: list[Prepared], timed_run: TimedRun
) -> tuple[list[RequestRecord], float, float]:
    # Workers are plain `python -m infermatrix.client.workers` children talking over their
    # stdin/stdout: no fork of a process with a running loop, and no re-import of the caller's
    # __main__ (which multiprocessing's spawn would do).
    shards = split(cfg, prepared)
    procs: list[asyncio.subprocess.Process] = []
    try:
        for conc, shard in shards:
            p = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "infermatrix.client.workers",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            sub = cfg.model_copy(update={"max_concurrency": conc, "num_workers": 1})
            _send(p.stdin, (sub.model_dump(), shard, timed_run))  # type: ignore[arg-type]
            procs.append(p)
        for p in procs:
            msg = await _recv_or(p.stdout, READY_TIMEOUT_S)  # type: ignore[arg-type]
            if msg != "ready":
                raise ClientInputError(f"a client worker failed to start: {msg}")
        t0 = perf_counter() + START_MARGIN_S
        for p in procs:
            _send(p.stdin, t0)  # type: ignore[arg-type]
        records: list[RequestRecord] = []
        t_end = t0
        for p in procs:
            msg = await _recv_or(p.stdout, None)  # type: ignore[arg-type]
            if isinstance(msg, str):
                raise ClientInputError(f"a client worker failed: {msg}")
            recs, _, end = msg
            records.extend(recs)
            t_end = max(t_end, end)
        records.sort(key=lambda r: r.index)
        return records, t0, t_end
    finally:
        for p in procs:
            if p.returncode is None:
                try:
                    await asyncio.wait_for(p.wait(), 5)
                except TimeoutError:
                    p.kill()
                    await p.wait()


def _send(w: Any, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    w.write(_LEN.pack(len(data)) + data)


async def _recv(r: asyncio.StreamReader) -> Any:
    n = _LEN.unpack(await r.readexactly(_LEN.size))[0]
    return pickle.loads(await r.readexactly(n))  # our own child process: trusted


async def _recv_or(r: asyncio.StreamReader, timeout: float | None) -> Any:
    """A message, or a one-line reason why none came."""
    try:
        async with asyncio.timeout(timeout):
            return await _recv(r)
    except TimeoutError:
        return "no answer within the start-up timeout"
    except asyncio.IncompleteReadError:
        return "the worker process exited"


async def _worker() -> None:
    """One worker process: read its shard, pre-connect, wait for t0, run, send the records."""
    from .request import make_client

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    out = sys.stdout.buffer
    try:
        cfg_dict, shard, timed_run = await _recv(reader)
        cfg = BenchConfig(**cfg_dict)
        async with make_client(cfg.timeouts) as client:
            await client.preconnect(cfg.url, cfg.max_concurrency or len(shard))
            _write(out, "ready")
            t0 = await _recv(reader)
            result = await timed_run(client, cfg, shard, t0=t0, quiet=True)
        _write(out, result)
    except Exception as e:  # report to the parent; no traceback from a child
        _write(out, f"{type(e).__name__}: {e}")


def _write(out: Any, obj: Any) -> None:
    _send(out, obj)
    out.flush()


if __name__ == "__main__":
    eventloop.run(_worker())
