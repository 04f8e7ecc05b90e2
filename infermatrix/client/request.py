"""One streamed request: send, read SSE, stamp every text-carrying event, classify failures.

This is the hot path. Each piece of body is stamped with the time the event loop delivered it
(http.py) and stored; event boundaries, JSON and accounting are done in bulk, off the receive
path (sse.py, :meth:`_Exchange._drain`). A malformed event (not UTF-8, not JSON), an in-stream
error or an oversized line or response fails the request with its reason. No tokenization, no formatting: everything else is computed after the run."""

from __future__ import annotations

import asyncio
import json
import os
from time import perf_counter
from typing import TYPE_CHECKING, Any

from .backends import decode_chunk, decode_full_response, error_message
from .config import Timeouts
from .http import BodySink, HTTPClient, HTTPError, Response, collector
from .records import RequestRecord
from .sse import SSEParser, Stamped

if TYPE_CHECKING:
    from .deferred import DeferredParser

_ERROR_BODY_LIMIT = 2000
DRAIN_PIECES = 8  # parse a stream's pending pieces in batches of this many reads
DRAIN_BYTES = 64 << 10  # ... and at once when this much body is pending
EVENT_LIMIT = 16 << 20  # an SSE line or event longer than this fails the request
RESPONSE_LIMIT = 256 << 20  # so does a response body larger than this
_raw_decode = json.JSONDecoder().raw_decode


def make_client(timeouts: Timeouts) -> HTTPClient:
    """One pooled keep-alive client: no connection cap, connect and idle-read timeouts. The
    total timeout is enforced per request by :func:`send`, so it can be told apart."""
    headers = {"Content-Type": "application/json", "User-Agent": "infermatrix-bench"}
    api_key = os.environ.get("OPENAI_API_KEY")
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return HTTPClient(timeouts.connect, timeouts.idle, headers)


class _Exchange:
    """Routes one response's body: SSE pieces into the record, or a small body to keep.

    The receive path (``_sse``) only keeps each piece with its receive stamp. Pieces are parsed
    in bulk (:meth:`_drain`): every ``DRAIN_PIECES`` pieces (every piece until the first token,
    for a record with ``on_first_token``: someone waits for it), after the reads the loop has
    already taken in (so it never delays their stamps) — in the run's :class:`DeferredParser`
    when there is one (slices of parsing between reads), else scheduled on the loop; when the
    answer has ended (a piece ending in ``data: [DONE]`` resolves the request at once, the rest
    is parsed later); at once when a piece may hold an error event or an unusual ``[DONE]``, or
    the pending bytes pass ``drain_at`` (memory stays small whatever the pieces)."""

    __slots__ = (
        "body",
        "deferred",
        "done_early",
        "drain_at",
        "drain_every",
        "drain_soon",
        "ended",
        "parser",
        "pending",
        "pieces",
        "received",
        "rec",
        "resp",
        "stamps",
    )

    def __init__(self, rec: RequestRecord, deferred: DeferredParser | None = None) -> None:
        self.rec = rec
        self.deferred = deferred
        self.parser: SSEParser | None = None
        self.body = bytearray()
        self.resp: Response | None = None
        self.pieces: list[bytes] = []
        self.stamps: list[float] = []
        self.pending = 0  # bytes in self.pieces
        self.received = 0  # bytes drained so far
        self.drain_at = DRAIN_BYTES
        # a record waiting for its first token is parsed from its first read on (see _events)
        self.drain_every = 1 if rec.on_first_token is not None else DRAIN_PIECES
        self.ended = False  # [DONE] or a failure: later bytes are not read
        self.done_early = False  # ended by a piece ending in "data: [DONE]", not parsed yet
        self.drain_soon = False  # a drain is scheduled after the loop's current reads

    def sink_for(self, resp: Response) -> BodySink:
        self.resp = resp
        self.rec.http_status = resp.status
        if resp.status == 200 and "text/event-stream" in resp.headers.get(
            "content-type", "text/event-stream"
        ):
            self.parser = SSEParser()
            return self._sse
        if resp.status != 200:
            return collector(self.body, _ERROR_BODY_LIMIT)
        return collector(self.body, RESPONSE_LIMIT, strict=True)

    def _sse(self, data: bytes, t: float) -> None:
        """The hot path: runs for every read of every stream. Keep it to appends and checks."""
        if self.ended:
            return
        pieces = self.pieces
        pieces.append(data)
        self.stamps.append(t)
        self.pending += len(data)
        if b"[DONE]" in data:
            if _ends_with_done(data, pieces, self.parser):  # type: ignore[arg-type]
                self.ended = self.done_early = True  # complete now, parse off the burst
                self.resp.finish_early(close=False)  # type: ignore[union-attr]
            else:
                self._drain_now()
        elif self.pending > self.drain_at or b'"error"' in data:
            self._drain_now()
        elif len(pieces) >= self.drain_every and not self.drain_soon:
            self.drain_soon = True
            if self.deferred is not None:
                self.deferred.stream(self)
            else:
                asyncio.get_running_loop().call_soon(self.drain_later)

    def _drain_now(self) -> None:
        self._drain()
        if self.rec.done_seen:
            self.resp.finish_early(close=False)  # type: ignore[union-attr]

    def drain_later(self) -> None:
        self.drain_soon = False
        resp = self.resp
        if self.ended or resp is None or resp.done.done():
            return  # finished meanwhile: finish() parses what is left
        try:
            self._drain_now()
        except HTTPError as e:
            resp.fail(e)
            resp.conn.close()

    def _drain(self) -> None:
        """Parse every pending piece; raises HTTPError when the stream is unusable."""
        parser = self.parser
        assert parser is not None
        pieces, stamps = self.pieces, self.stamps
        self.pieces, self.stamps = [], []
        self.received += self.pending
        self.pending = 0
        if self.received > RESPONSE_LIMIT:
            self.ended = True
            raise HTTPError("response_too_large", f"response larger than {_mib(RESPONSE_LIMIT)}")
        events = parser.feed_stamped(pieces, stamps)
        if parser.pending > EVENT_LIMIT:
            self.ended = True
            raise HTTPError(
                "sse_event_too_large", f"an SSE line or event longer than {_mib(EVENT_LIMIT)}"
            )
        # the next drain copies the pending event once more: wait until it has (at least) doubled,
        # and at most half the event limit, so an endless line is cut off by 1.5 x EVENT_LIMIT
        # after a few copies (draining more often copies it more often)
        self.drain_at = max(DRAIN_BYTES, min(parser.pending, EVENT_LIMIT // 2))
        self._events(events)

    def _events(self, events: list[Stamped]) -> None:
        """Account a batch of stamped events into the record."""
        rec = self.rec
        times, texts = rec.event_times, rec.event_texts
        first_bad = ""
        for t, data in events:
            if data == b"[DONE]":
                rec.done_seen = self.ended = True
                break
            try:
                text = data.decode()
                try:
                    obj, end = _raw_decode(text)  # json.loads minus its per-call overhead
                except ValueError:
                    end = -1
                if end != len(text):  # surrounding whitespace, or not JSON: json.loads decides
                    obj = json.loads(text)
                c = decode_chunk(obj)
            except (ValueError, RecursionError) as e:  # not UTF-8 (UnicodeDecodeError) or not JSON
                rec.bad_events += 1
                first_bad = first_bad or f"{_why(e)}: {data[:80]!r}"
                continue
            if c.error is not None:
                self.ended = True
                raise HTTPError("stream_error", c.error)
            if c.text:  # a role-only or empty chunk is not a token
                times.append(t)
                texts.append(c.text)
            if c.completion_tokens is not None:
                rec.usage_completion_tokens = c.completion_tokens
            if c.prompt_tokens is not None:
                rec.usage_prompt_tokens = c.prompt_tokens
            if rec.response_id is None and c.id:
                rec.response_id = c.id
        if rec.on_first_token is not None and times:  # (once per request, not per event)
            notify, rec.on_first_token = rec.on_first_token, None
            self.drain_every = DRAIN_PIECES
            notify(times[0])
        if first_bad:
            self.ended = True
            raise HTTPError("bad_event", f"{rec.bad_events} malformed event(s), first: {first_bad}")

    def complete(self) -> RequestRecord:
        """Parse what is left and classify the outcome."""
        rec = self.rec
        if rec.error is None:
            try:
                self.finish()
            except HTTPError as e:
                _fail(rec, e)
        if rec.error is None and not rec.event_times:
            rec.error = "empty_output"
            rec.error_detail = "the response carried no generated text"
        return rec

    def finish(self) -> None:
        """After the body ended (or [DONE]): complete the record. Raises HTTPError."""
        rec = self.rec
        if rec.http_status != 200:
            _http_error(rec, self.resp, bytes(self.body))
        elif self.parser is None:
            _whole_body(rec, bytes(self.body), self.resp.last_rx if self.resp else perf_counter())
        elif not self.ended or self.done_early:
            self._drain()
            if not rec.done_seen:  # [DONE] missing: the end of the body ends the stream
                end = self.resp.last_rx if self.resp else perf_counter()
                self._events(self.parser.flush_stamped(end))


async def send(*args: Any, **kwargs: Any) -> RequestRecord:
    """:func:`transfer` (same arguments), then :func:`complete`: send one request and fill its
    record, received and parsed. Never raises for a server-side problem."""
    return complete(await transfer(*args, **kwargs))


async def transfer(
    client: HTTPClient,
    url: str,
    body: bytes,
    rec: RequestRecord,
    total_timeout: float,
    headers: dict[str, str] | None = None,
    deferred: DeferredParser | None = None,
) -> _Exchange:
    """Send one request and receive its answer, stamped; :func:`complete` parses what is left.
    Between the two the caller may free its concurrency slot (the next request goes first).
    With ``deferred``, the answer is parsed there while it streams, between reads."""
    ex = _Exchange(rec, deferred)
    rec.start = perf_counter()
    try:
        async with asyncio.timeout(total_timeout):
            await client.request("POST", url, body, ex.sink_for, headers)
    except HTTPError as e:
        _fail(rec, e)
    except TimeoutError:
        rec.error, rec.error_detail = (
            "timeout_total",
            f"request took longer than {total_timeout:g} s",
        )
    finally:
        rec.end = perf_counter()
    return ex


def complete(ex: _Exchange) -> RequestRecord:
    """Parse what :func:`transfer` stored and classify the outcome."""
    return ex.complete()


def _fail(rec: RequestRecord, e: HTTPError) -> None:
    rec.error, rec.error_detail = e.kind, str(e)[:300]


async def get_json(client: HTTPClient, url: str, timeout: float) -> tuple[int, object]:
    """GET a small JSON document: (status, parsed body or None)."""
    buf = bytearray()
    async with asyncio.timeout(timeout):
        resp = await client.request("GET", url, None, lambda r: collector(buf))
    try:
        return resp.status, json.loads(bytes(buf))
    except (ValueError, RecursionError):
        return resp.status, None


def _http_error(rec: RequestRecord, resp: Response | None, raw: bytes) -> None:
    status = rec.http_status
    rec.error = f"http_{status}"
    text = raw.decode("utf-8", "replace")
    try:
        text = error_message(json.loads(text))
    except (ValueError, RecursionError):
        pass
    reason = resp.reason if resp is not None else ""
    rec.error_detail = f"HTTP {status} {reason}: {' '.join(text.split())[:300]}".strip()


def _whole_body(rec: RequestRecord, raw: bytes, now: float) -> None:
    """A server that ignored ``stream: true`` and answered one JSON document (received at now)."""
    try:
        c = decode_full_response(json.loads(raw))
    except (ValueError, RecursionError):
        rec.error, rec.error_detail = "bad_response", f"not SSE and not JSON: {raw[:100]!r}"
        return
    if c.error is not None:
        rec.error, rec.error_detail = "stream_error", c.error[:300]
        return
    rec.usage_completion_tokens = c.completion_tokens
    rec.usage_prompt_tokens = c.prompt_tokens
    if c.text:
        rec.event_times.append(now)
        rec.event_texts.append(c.text)
    rec.response_id = c.id


_DONE = b"data: [DONE]\n\n"


def _ends_with_done(data: bytes, pieces: list[bytes], parser: SSEParser) -> bool:
    """True when ``data`` certainly ends the stream with the ``[DONE]`` event: it ends in
    ``data: [DONE]`` + blank line, and what comes before ends in a blank line too (so that line
    starts an event). Anything less usual is decided by parsing."""
    if data.endswith(b"\n\n" + _DONE):
        return True
    if data != _DONE:
        return False
    if len(pieces) > 1:
        return pieces[-2].endswith(b"\n\n")
    return parser.pending == 0  # what was parsed before ended at an event boundary


def _why(e: ValueError | RecursionError) -> str:
    if isinstance(e, RecursionError):  # any JSON shape is survived, deep nesting included
        return "invalid JSON (nested too deeply)"
    if isinstance(e, UnicodeDecodeError):
        return f"invalid UTF-8 at byte {e.start}"
    return f"invalid JSON ({e})"


def _mib(n: int) -> str:
    return f"{n >> 20} MiB"
