"""Between concurrency levels: wait until no request is in flight, and flush the prefix cache
when the workload asks, so one level's leftovers never leak into the next one's numbers."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .readiness import http_status

# Prometheus gauges of requests running or queued, per engine (the sim uses vLLM's names).
IN_FLIGHT = ("vllm:num_requests_running", "vllm:num_requests_waiting",
             "sglang:num_running_reqs", "sglang:num_queue_reqs")
# POST endpoint that drops the prefix cache. vLLM serves it only with VLLM_SERVER_DEV_MODE=1
# (set it in the recipe's env); TensorRT-LLM has none.
FLUSH_PATH = {"vllm": "/reset_prefix_cache", "sim": "/reset_prefix_cache", "sglang": "/flush_cache"}
POLL_S = 0.25


def in_flight(base_url: str) -> float | None:
    """Requests running + waiting on one server, or None when it exposes no such metric."""
    status, body = http_status(base_url.rstrip("/") + "/metrics", timeout=5)
    if not 200 <= status < 300:
        return None
    total, seen = 0.0, False
    for line in body.decode(errors="replace").splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in IN_FLIGHT:
            try:
                total += float(line.rsplit(" ", 1)[1])
                seen = True
            except (IndexError, ValueError):
                continue
    return total if seen else None


def drain(urls: Sequence[str], timeout_s: float = 120.0) -> dict[str, Any]:
    """Wait until every server reports nothing in flight. Never raises: says what it saw."""
    start = time.monotonic()
    pending = list(urls)
    unobservable: list[str] = []
    while pending:
        url = pending[0]
        count = in_flight(url)
        if count is None:
            unobservable.append(pending.pop(0))
        elif count == 0:
            pending.pop(0)
        elif time.monotonic() - start > timeout_s:
            return {"drained": False, "waited_s": round(time.monotonic() - start, 2),
                    "note": f"{url} still had {count:g} requests in flight after {timeout_s:.0f} s"}
        else:
            time.sleep(POLL_S)
    note = f"no in-flight metric at {', '.join(unobservable)}" if unobservable else None
    return {"drained": not unobservable, "waited_s": round(time.monotonic() - start, 2), "note": note}


def flush_prefix_cache(urls: Sequence[str], engine: str) -> dict[str, Any]:
    path = FLUSH_PATH.get(engine)
    if path is None:
        return {"flushed": False, "note": f"{engine} has no prefix-cache flush endpoint"}
    failed = []
    for url in urls:
        status, _ = http_status(url.rstrip("/") + path, body={}, timeout=30)
        if not 200 <= status < 300:
            failed.append(f"{url}{path} -> HTTP {status}")
    note = "; ".join(failed) or None
    if failed and engine == "vllm":
        note = f"{note} (vLLM serves it only with VLLM_SERVER_DEV_MODE=1 in the recipe's env)"
    return {"flushed": not failed, "note": note}


def settle(urls: Sequence[str], timeout_s: float, flush_engine: str | None) -> dict[str, Any]:
    """What runs before each level: drain the servers, then flush their prefix caches when
    ``flush_engine`` names the engine to flush (None: no flush)."""
    steps: dict[str, Any] = {"drain": drain(urls, timeout_s)}
    if flush_engine:
        steps["flush"] = flush_prefix_cache(urls, flush_engine)
    return steps
