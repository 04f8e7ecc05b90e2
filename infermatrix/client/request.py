"""One streamed request: send, read SSE, stamp every text-carrying event, classify failures.

This is the hot path. Events are stamped with the time the event loop delivered their bytes
(http.py) and decoded in the same callback; no tokenization, no formatting. Everything else
is computed after the run."""

from __future__ import annotations

import asyncio
import json
import os
from time import perf_counter

from .backends import decode_chunk, decode_full_response, error_message
from .config import Timeouts
from .http import BodySink, HTTPClient, HTTPError, Response, collector
from .records import RequestRecord
from .sse import SSEParser

_ERROR_BODY_LIMIT = 2000


def make_client(timeouts: Timeouts) -> HTTPClient:
    """One pooled keep-alive client: no connection cap, connect and idle-read timeouts. The
    total timeout is enforced per request by :func:`send`, so it can be told apart."""
    headers = {"Content-Type": "application/json", "User-Agent": "infermatrix-bench"}
    api_key = os.environ.get("OPENAI_API_KEY")
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return HTTPClient(timeouts.connect, timeouts.idle, headers)


class _Exchange:
    """Routes one response's body: SSE events into the record, or a small body to keep."""

    __slots__ = ("body", "parser", "rec", "resp", "texts", "times")

    def __init__(self, rec: RequestRecord) -> None:
        self.rec = rec
        self.times = rec.event_times
        self.texts = rec.event_texts
        self.parser: SSEParser | None = None
        self.body = bytearray()
        self.resp: Response | None = None

    def sink_for(self, resp: Response) -> BodySink:
        self.resp = resp
        self.rec.http_status = resp.status
        if resp.status == 200 and "text/event-stream" in resp.headers.get(
            "content-type", "text/event-stream"
        ):
            self.parser = SSEParser()
            return self._sse
        return collector(self.body, _ERROR_BODY_LIMIT if resp.status != 200 else 1 << 26)

    def _sse(self, data: bytes, t: float) -> None:
        assert self.parser is not None and self.resp is not None
        for event in self.parser.feed(data):
            if _event(event, t, self.rec, self.times, self.texts):
                # [DONE] or an in-stream error: the answer is complete.
                self.resp.finish_early(close=self.rec.error is not None)
                return

    def finish(self) -> None:
        """After the body ended (or [DONE]): complete the record."""
        rec = self.rec
        if rec.http_status != 200:
            _http_error(rec, self.resp, bytes(self.body))
        elif self.parser is None:
            _whole_body(rec, bytes(self.body), self.resp.last_rx if self.resp else perf_counter())
        elif not rec.done_seen and rec.error is None:
            for event in self.parser.flush():  # [DONE] missing: the close ends the stream
                _event(event, perf_counter(), rec, self.times, self.texts)


async def send(
    client: HTTPClient,
    url: str,
    body: bytes,
    rec: RequestRecord,
    total_timeout: float,
    headers: dict[str, str] | None = None,
) -> RequestRecord:
    """Send one request and fill ``rec``. Never raises for a server-side problem."""
    ex = _Exchange(rec)
    rec.start = perf_counter()
    try:
        async with asyncio.timeout(total_timeout):
            await client.request("POST", url, body, ex.sink_for, headers)
        ex.finish()
    except HTTPError as e:
        rec.error, rec.error_detail = e.kind, str(e)[:300]
    except TimeoutError:
        rec.error, rec.error_detail = (
            "timeout_total",
            f"request took longer than {total_timeout:g} s",
        )
    finally:
        rec.end = perf_counter()
    if rec.error is None and not rec.event_times:
        rec.error = "empty_output"
        rec.error_detail = "the response carried no generated text"
    return rec


async def get_json(client: HTTPClient, url: str, timeout: float) -> tuple[int, object]:
    """GET a small JSON document: (status, parsed body or None)."""
    buf = bytearray()
    async with asyncio.timeout(timeout):
        resp = await client.request("GET", url, None, lambda r: collector(buf))
    try:
        return resp.status, json.loads(bytes(buf))
    except ValueError:
        return resp.status, None


def _event(data: str, now: float, rec: RequestRecord, times: list[float], texts: list[str]) -> bool:
    """Handle one SSE data payload; return True when the stream is finished ([DONE] or error)."""
    if data == "[DONE]":
        rec.done_seen = True
        return True
    try:
        obj = json.loads(data)
    except ValueError:
        rec.bad_events += 1
        return False
    c = decode_chunk(obj)
    if c.error is not None:
        rec.error = "stream_error"
        rec.error_detail = c.error[:300]
        return True
    if c.text:  # a role-only or empty chunk is not a token
        times.append(now)
        texts.append(c.text)
    if c.completion_tokens is not None:
        rec.usage_completion_tokens = c.completion_tokens
    if c.prompt_tokens is not None:
        rec.usage_prompt_tokens = c.prompt_tokens
    if rec.response_id is None and c.id:
        rec.response_id = c.id
    return False


def _http_error(rec: RequestRecord, resp: Response | None, raw: bytes) -> None:
    status = rec.http_status
    rec.error = f"http_{status}"
    text = raw.decode("utf-8", "replace")
    try:
        text = error_message(json.loads(text))
    except ValueError:
        pass
    reason = resp.reason if resp is not None else ""
    rec.error_detail = f"HTTP {status} {reason}: {' '.join(text.split())[:300]}".strip()


def _whole_body(rec: RequestRecord, raw: bytes, now: float) -> None:
    """A server that ignored ``stream: true`` and answered one JSON document (received at now)."""
    try:
        c = decode_full_response(json.loads(raw))
    except ValueError:
        rec.error, rec.error_detail = "bad_response", f"not SSE and not JSON: {raw[:100]!r}"
        return
    if c.error is not None:
        rec.error, rec.error_detail = "stream_error", c.error[:300]
        return
    if c.text:
        rec.event_times.append(now)
        rec.event_texts.append(c.text)
    rec.usage_completion_tokens = c.completion_tokens
    rec.usage_prompt_tokens = c.prompt_tokens
    rec.response_id = c.id
