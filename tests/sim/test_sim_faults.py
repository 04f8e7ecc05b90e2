"""Every fault mode, seen on the wire by a real HTTP client."""

from __future__ import annotations

import asyncio
import time

import pytest
from sim_helpers import config, get_text, run, session, stream

from infermatrix.sim.faults import FaultError, parse_faults

FAST = 20.0


def _one(base: str, fault: str | None = None, chat: bool = False, **body) -> object:
    async def go():
        async with session() as s:
            headers = {"X-Sim-Fault": fault} if fault else None
            path = "/v1/chat/completions" if chat else "/v1/completions"
            payload = {"messages": [{"role": "user", "content": "hi"}]} if chat else {"prompt": "a b c"}
            return await stream(s, base + path, {**payload, "max_tokens": 10, **body}, headers)

    return run(go())


@pytest.fixture
def base(sim_server) -> str:
    return sim_server(config(tp=8), time_scale=FAST).base_url


def test_stall_mid_stream(base: str) -> None:
    out = _one(base, "stall:after=3,seconds=0.8")
    assert out.words == 10 and out.done
    gaps = [b - a for a, b in zip(out.text_events, out.text_events[1:], strict=False)]
    counts = [sum(out.text_words[:i + 1]) for i in range(len(out.text_words))]
    at = counts.index(3)  # the event that completes token 3 exists: the stall begins there
    assert gaps[at] >= 0.75
    assert max(gaps[:at] + gaps[at + 1:], default=0) < 0.4


def test_drop_connection_mid_stream(base: str) -> None:
    out = _one(base, "drop:after=4")
    assert out.error is not None  # the connection died inside the chunked body
    assert out.words == 4 and not out.done and out.usage is None


@pytest.mark.parametrize("status", [429, 500, 503])
def test_http_error_statuses(base: str, status: int) -> None:
    out = _one(base, f"error:status={status}")
    assert out.status == status and out.body["error"]["code"] == status


def test_malformed_sse_json(base: str) -> None:
    out = _one(base, "malformed:after=2")
    raw = [e for _, e in out.events if isinstance(e, str)]
    assert len(raw) == 1 and raw[0].startswith("{")  # a data: line that is not JSON
    assert out.words == 10 and out.done


def test_no_usage_chunk(base: str) -> None:
    out = _one(base, "no_usage")
    assert out.done and out.words == 10 and out.usage is None


def test_multi_token_chunks(base: str) -> None:
    out = _one(base, "multi_token:n=4", chat=True)
    pieces = [e["choices"][0]["delta"].get("content", "") for _, e in out.events
              if isinstance(e, dict) and e["choices"]]
    sizes = [len(p.split()) for p in pieces if p]
    assert sizes == [4, 4, 2] and out.usage["completion_tokens"] == 10


def test_health_ok_but_generation_failing(base: str) -> None:
    async def health():
        async with session() as s:
            return await get_text(s, base + "/health")

    assert run(health())[0] == 200
    out = _one(base, "gen_fail")
    assert out.status == 500


def test_server_wide_faults_hit_the_given_share_of_requests(sim_server) -> None:
    base = sim_server(config(tp=8), time_scale=FAST, faults="error:status=503,rate=0.5", seed=1).base_url

    async def go():
        async with session() as s:
            return await asyncio.gather(*(stream(s, base + "/v1/completions",
                                                 {"prompt": "a", "max_tokens": 2}) for _ in range(40)))

    statuses = [r.status for r in run(go())]
    assert 8 <= statuses.count(503) <= 32 and statuses.count(200) + statuses.count(503) == 40


def test_slow_start_health_503_then_200(sim_server) -> None:
    base = sim_server(config(tp=8), time_scale=FAST, faults="slow_start:seconds=1").base_url
    t0 = time.monotonic()

    async def poll():
        codes = []
        async with session() as s:
            while True:
                status, _ = await get_text(s, base + "/health")
                codes.append((time.monotonic() - t0, status))
                if status == 200:
                    return codes
                await asyncio.sleep(0.1)

    codes = run(poll())
    assert codes[0][1] == 503
    assert codes[-1][1] == 200 and codes[-1][0] >= 0.8


def test_bad_fault_specs_are_one_line_errors() -> None:
    for bad in ("explode", "stall:after=x", "error:status=404", "drop:seconds=1", "stall:rate=2"):
        with pytest.raises(FaultError):
            parse_faults(bad)
    assert [f.kind for f in parse_faults("503; no_usage ;multi_token:n=3")] == ["error", "no_usage",
                                                                                 "multi_token"]
