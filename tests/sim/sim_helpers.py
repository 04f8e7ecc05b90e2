"""A minimal streaming OpenAI client for the sim tests: real HTTP, timestamps per event."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from infermatrix.catalog.loader import Catalog, load_catalog
from infermatrix.sim.config import SimConfig

_CATALOG: Catalog | None = None


def catalog() -> Catalog:
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = load_catalog()
    return _CATALOG


def config(hardware: str = "H200", model: str = "llama-3.1-70b-instruct", precision: str = "fp8",
           **kw: Any) -> SimConfig:
    kw.setdefault("served_model_name", "sim-model")
    return SimConfig.from_parts(catalog(), hardware, model, precision, **kw)


@dataclass
class Streamed:
    status: int
    start: float
    events: list[tuple[float, Any]] = field(default_factory=list)  # (time, parsed JSON or raw str)
    text: str = ""
    text_events: list[float] = field(default_factory=list)  # times of events carrying text
    text_words: list[int] = field(default_factory=list)  # words in each of those events
    usage: dict[str, Any] | None = None
    done: bool = False  # saw [DONE]
    error: str | None = None
    body: Any = None  # non-2xx or non-streaming JSON body

    @property
    def ttft(self) -> float:
        return self.text_events[0] - self.start

    @property
    def words(self) -> int:
        return len(self.text.split())

    @property
    def tpot(self) -> float:
        return (self.text_events[-1] - self.text_events[0]) / (self.words - 1)


async def stream(session: aiohttp.ClientSession, url: str, body: dict[str, Any],
                 headers: dict[str, str] | None = None) -> Streamed:
    body = {"model": "sim-model", "stream": True, "stream_options": {"include_usage": True}, **body}
    start = time.perf_counter()
    try:
        async with session.post(url, json=body, headers=headers or {}) as resp:
            out = Streamed(resp.status, start)
            if resp.status != 200:
                out.body = await resp.json(content_type=None)
                return out
            async for raw in resp.content:
                now = time.perf_counter()
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    out.done = True
                    continue
                try:
                    obj = json.loads(data)
                except json.JSONDecodeError:
                    out.events.append((now, data))
                    continue
                out.events.append((now, obj))
                if obj.get("usage"):
                    out.usage = obj["usage"]
                for choice in obj.get("choices", []):
                    piece = choice.get("text") or (choice.get("delta") or {}).get("content") or ""
                    if piece:
                        out.text += piece
                        out.text_events.append(now)
                        out.text_words.append(len(piece.split()))
    except (TimeoutError, aiohttp.ClientError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    return out


async def post_json(session: aiohttp.ClientSession, url: str, body: dict[str, Any] | None = None,
                    headers: dict[str, str] | None = None) -> tuple[int, Any]:
    async with session.post(url, json=body, headers=headers or {}) as resp:
        return resp.status, await resp.json(content_type=None)


async def get_text(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as resp:
        return resp.status, await resp.text()


def assert_phases_match_steps(cfg: SimConfig, reqs: list[Any]) -> None:
    """Decode phases in closed form time every request as stepping one step at a time does."""
    import pytest

    from infermatrix.sim import simulate

    fast, slow = simulate(cfg, reqs), simulate(cfg, reqs, streaks=False)
    assert fast.steps == slow.steps
    for a, b in zip(fast.results, slow.results, strict=True):
        assert (a.first_token_at, a.finished_at) == pytest.approx(
            (b.first_token_at, b.finished_at), abs=1e-9)


def metric(text: str, name: str) -> float:
    """Sum of a Prometheus metric's samples in an exposition text."""
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
            seen = True
    assert seen, f"metric {name} not exposed"
    return total


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def session(**kw: Any) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                 timeout=aiohttp.ClientTimeout(total=60), **kw)
