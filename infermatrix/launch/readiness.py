"""Is the server really serving? Health must answer 2xx, then one canary generation must succeed
through the front door. A process that exits, or the deadline, fails at once with its log tail."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence

from ..engines.deployment import Canary  # the one canary: what the renderer says proves serving
from .process import ManagedProcess

POLL_INTERVAL_S = 0.25


class NotReady(Exception):
    pass


def http_status(url: str, body: dict[str, object] | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (our own URL)
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError, TimeoutError):
        return 0, b""


def _check_alive(procs: Sequence[ManagedProcess]) -> None:
    for proc in procs:
        code = proc.exit_code()
        if code is not None:
            raise NotReady(f"{proc.name} exited with code {code} before serving; "
                           f"log tail:\n{proc.tail()}")


def wait_ready(health_urls: Sequence[str], base_url: str, canary: Canary,
               procs: Sequence[ManagedProcess], timeout_s: float) -> float:
    """Block until every health URL answers 2xx and the canary generates; return seconds taken."""
    start = time.monotonic()
    deadline = start + timeout_s
    pending = list(health_urls)
    while pending:
        _check_alive(procs)
        if time.monotonic() > deadline:
            raise NotReady(f"no 2xx from {pending[0]} within {timeout_s:.0f} s")
        status, _ = http_status(pending[0])
        if 200 <= status < 300:
            pending.pop(0)
        else:
            time.sleep(POLL_INTERVAL_S)
    while True:
        _check_alive(procs)
        status, payload = http_status(base_url.rstrip("/") + canary.path, canary.body, timeout=60)
        if 200 <= status < 300 and _generated_text(payload):
            return time.monotonic() - start
        if time.monotonic() > deadline:
            raise NotReady(f"canary request to {canary.path} failed (HTTP {status}): "
                           f"{payload[:200].decode(errors='replace')}")
        time.sleep(POLL_INTERVAL_S)


def _generated_text(payload: bytes) -> bool:
    try:
        choice = json.loads(payload)["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return False
    text = choice.get("text") or (choice.get("message") or {}).get("content") or ""
    return bool(text.strip())
