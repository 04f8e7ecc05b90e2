"""A small HTTP/1.1 client on asyncio protocols, built for timestamp accuracy.

Why not aiohttp on the hot path: with a task per stream, a received event is stamped only when
its task is resumed; when a server emits one decode step for hundreds of streams at once, the
tasks run one after another and the last stamp is late by hundreds × (task switch + parsing).
Here the stamp is taken in ``data_received``, the moment the event loop hands us the bytes, and
the bytes are handed on in the same call: no task wake-up per event at all.

Scope: what OpenAI-compatible servers need. Keep-alive pool with no connection cap (one
connection per in-flight request), Content-Length / chunked / read-to-close bodies, TLS via
``ssl``. Not supported: proxies, HTTP/2, compressed bodies (we send ``Accept-Encoding: identity``).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from time import perf_counter
from urllib.parse import urlsplit

# Called with (body bytes, receive time) for every piece of body, in order.
BodySink = Callable[[bytes, float], None]
# Called once the response head is parsed (status, headers are set); returns the body sink.
SinkFactory = Callable[["Response"], BodySink]


class HTTPError(Exception):
    """Transport-level failure; ``kind`` is the failure class used in results."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


_HEX = b"0123456789abcdefABCDEF"
_LINE_LIMIT = 4096  # a chunk-size or trailer line longer than this is not HTTP


class _Chunked:
    """Incremental Transfer-Encoding: chunked decoder. ``feed`` returns the body bytes a read
    carried, joined: every piece of one read has the same receive stamp."""

    __slots__ = ("_buf", "_left", "_state", "done")

    def __init__(self) -> None:
        self._buf = b""
        self._left = 0
        self._state = 0  # 0 size line, 1 data, 2 CRLF after data, 3 trailers
        self.done = False

    def feed(self, data: bytes) -> bytes:
        if not self._state and not self._buf:
            # The usual read on a streaming connection: exactly one whole chunk (one event).
            i = data.find(b"\r\n", 0, 18)
            if i > 0 and not data[:i].strip(_HEX):
                end = i + 2 + int(data[:i], 16)
                if end > i + 2 and len(data) == end + 2 and data.endswith(b"\r\n"):
                    return data[i + 2 : end]
        buf = self._buf + data if self._buf else data
        out: list[bytes] = []
        pos, n = 0, len(buf)
        state, left = self._state, self._left
        while pos < n:
            if state == 1:  # chunk data
                end = pos + left
                if end >= n:
                    out.append(buf[pos:])
                    left = end - n
                    pos = n
                    if not left:
                        state = 2
                    break
                out.append(buf[pos:end])
                pos, state = end, 2
            elif state == 0:  # chunk-size line
                i = buf.find(b"\r\n", pos)
                if i < 0:
                    break
                digits = buf[pos:i]
                if not digits or digits.strip(_HEX) or len(digits) > 16:  # extension, or bad
                    digits = digits.split(b";", 1)[0].strip()
                    if not digits or digits.strip(_HEX) or len(digits) > 16:
                        raise HTTPError("bad_response", f"bad chunk size line {digits[:40]!r}")
                left = int(digits, 16)
                pos = i + 2
                end = pos + left
                if left and end + 2 <= n:  # the whole chunk and its CRLF are here: take it
                    out.append(buf[pos:end])
                    pos = end + 2
                    continue
                state = 1 if left else 3
            elif state == 2:  # the CRLF after chunk data
                if n - pos < 2:
                    break
                pos += 2
                state = 0
            else:  # trailers, ended by an empty line
                i = buf.find(b"\r\n", pos)
                if i < 0:
                    break
                if i == pos:
                    self.done = True
                    pos = n  # nothing may follow the body on this exchange
                    break
                pos = i + 2
        self._state, self._left = state, left
        self._buf = buf[pos:]
        if len(self._buf) > _LINE_LIMIT:
            raise HTTPError("bad_response", "chunk-size or trailer line too long")
        return out[0] if len(out) == 1 else b"".join(out)


class Response:
    """One exchange on a connection: parses the head, frames the body, feeds the sink."""

    def __init__(self, sink_factory: SinkFactory, conn: _Conn) -> None:
        self._sink_factory = sink_factory
        self.conn = conn
        self._head = b""
        self.status = 0
        self.reason = ""
        self.headers: dict[str, str] = {}
        self.sink: BodySink | None = None
        self.keep_alive = True
        self._length: int | None = None
        self._chunked: _Chunked | None = None
        self.received_any = False
        self.last_rx = perf_counter()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.complete = False  # body fully framed (connection reusable)

    def feed(self, data: bytes, t: float) -> None:
        self.last_rx = t
        if self.sink is None:
            self.received_any = True
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                if len(self._head) > 65536:
                    raise HTTPError("bad_response", "response head larger than 64 KiB")
                return
            data = self._head[end + 4 :]
            self._parse_head(self._head[:end].decode("latin-1"))
            self._head = b""
            if self.status < 200:  # 1xx interim response: wait for the real one
                self.sink = None
                if data:
                    self.feed(data, t)
                return
        chunked = self._chunked
        if chunked is not None:
            body = chunked.feed(data)
            if body:
                self.sink(body, t)  # type: ignore[misc]
            if chunked.done:
                self._finish()
        elif self._length is not None:
            take = data[: self._length]
            self._length -= len(take)
            if take:
                self.sink(take, t)  # type: ignore[misc]
            if not self._length:
                self._finish()
        elif data:
            self.sink(data, t)  # type: ignore[misc]  # read until close

    def _parse_head(self, head: str) -> None:
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise HTTPError("bad_response", f"not an HTTP response: {lines[0][:60]!r}")
        self.status = int(parts[1])
        self.reason = parts[2] if len(parts) > 2 else ""
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        self.headers = headers
        if self.status < 200:
            return
        conn = headers.get("connection", "").lower()
        self.keep_alive = parts[0] != "HTTP/1.0" and conn != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._chunked = _Chunked()
        elif "content-length" in headers:
            self._length = int(headers["content-length"])
        else:
            self.keep_alive = False  # body ends when the server closes
        self.sink = self._sink_factory(self)
        if self._length == 0 or self.status in (204, 304):
            self._finish()

    def _finish(self) -> None:
        self.complete = True
        if not self.done.done():
            self.done.set_result(None)

    def finish_early(self, close: bool) -> None:
        """The reader has all it needs (e.g. [DONE]): resolve now. The connection keeps reading
        to the end of the body and returns to the pool, unless ``close``."""
        if not self.done.done():
            self.done.set_result(None)
        if close:
            self.conn.close()

    def fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)


class _Conn(asyncio.Protocol):
    def __init__(self, pool: HTTPClient, key: tuple[str, str, int]) -> None:
        self.pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.resp: Response | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        t = perf_counter()  # the receive stamp: before any parsing
        resp = self.resp
        if resp is None:
            self.close()  # unsolicited bytes: this connection is not trustworthy
            return
        try:
            resp.feed(data, t)
        except HTTPError as e:
            resp.fail(e)
            self.close()
            return
        except Exception as e:  # a bug in a sink must fail the request, not the loop
            resp.fail(HTTPError("client_error", f"{type(e).__name__}: {e}"))
            self.close()
            return
        if resp.complete:
            self.resp = None
            if resp.keep_alive:
                self.pool._release(self)
            else:
                self.close()

    def eof_received(self) -> bool:
        resp = self.resp
        if (
            resp is not None
            and resp.sink is not None
            and resp._chunked is None
            and resp._length is None
        ):
            resp.last_rx = perf_counter()  # when the body was known complete
            resp._finish()  # read-until-close body ended normally
            self.resp = None
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool._all.discard(self)
        resp = self.resp
        if resp is not None and not resp.done.done():
            detail = f"{type(exc).__name__}: {exc}" if exc else "server closed the connection"
            resp.fail(HTTPError("disconnect", f"{detail} (before the response ended)"))
        self.resp = None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class _IdleWatch:
    """Idle-read timeout: fails the response when no byte arrived for ``idle`` seconds. One
    timer per idle period, re-armed from the last receive, not one per event."""

    __slots__ = ("_handle", "_idle", "_resp")

    def __init__(self, resp: Response, idle: float) -> None:
        self._resp = resp
        self._idle = idle
        resp.last_rx = perf_counter()
        self._handle = asyncio.get_running_loop().call_later(idle, self._check)

    def _check(self) -> None:
        resp = self._resp
        if resp.done.done():
            return
        quiet = perf_counter() - resp.last_rx
        if quiet >= self._idle:
            resp.fail(
                HTTPError(
                    "timeout_idle", f"no data for {quiet:.1f} s (idle timeout {self._idle:g} s)"
                )
            )
            resp.conn.close()
        else:
            self._handle = asyncio.get_running_loop().call_later(self._idle - quiet, self._check)

    def cancel(self) -> None:
        self._handle.cancel()


class HTTPClient:
    """Pooled keep-alive connections, unlimited (one per in-flight request)."""

    def __init__(
        self,
        connect_timeout: float,
        idle_timeout: float,
        default_headers: dict[str, str] | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.default_headers = default_headers or {}
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self._all: set[_Conn] = set()
        self._ssl: ssl.SSLContext | None = None

    async def __aenter__(self) -> HTTPClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for c in list(self._all):
            c.close()
        self._all.clear()
        self._idle.clear()

    async def request(
        self,
        method: str,
        url: str,
        body: bytes | None,
        sink_factory: SinkFactory,
        headers: dict[str, str] | None = None,
    ) -> Response:
        """Send one request; ``sink_factory(response)`` returns the body sink once the head
        arrives. Returns when the body is complete (or the sink called ``finish_early``).
        Raises HTTPError (kind: connect_error, timeout_connect, timeout_idle, disconnect,
        bad_response)."""
        u = urlsplit(url)
        key = _key(url)
        host = key[1]
        path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        hdrs = {
            "Host": u.netloc or host,
            "Accept": "text/event-stream, application/json",
            "Accept-Encoding": "identity",
            "Connection": "keep-alive",
            **self.default_headers,
            **(headers or {}),
        }
        if body is not None:
            hdrs["Content-Length"] = str(len(body))
        head = (
            f"{method} {path} HTTP/1.1\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
            + "\r\n"
        )
        payload = head.encode("latin-1") + (body or b"")

        for attempt in (0, 1):
            conn, reused = await self._acquire(key)
            resp = Response(sink_factory, conn)
            conn.resp = resp
            assert conn.transport is not None
            conn.transport.write(payload)
            watchdog = _IdleWatch(resp, self.idle_timeout)
            try:
                await resp.done
                return resp
            except HTTPError as e:
                # A pooled connection the server had already closed: retry once, fresh.
                if attempt == 0 and reused and e.kind == "disconnect" and not resp.received_any:
                    continue
                raise
            except BaseException:
                conn.close()  # cancelled (total timeout) or failed: never reuse
                raise
            finally:
                watchdog.cancel()
        raise AssertionError("unreachable")

    async def preconnect(self, url: str, n: int) -> int:
        """Top the pool up to ``n`` idle keep-alive connections to ``url``'s host, so the first
        requests of a run do not pay TCP set-up. Returns how many are idle now."""
        key = _key(url)
        idle = self._idle.setdefault(key, [])
        idle[:] = [c for c in idle if not c.closed]
        missing = max(0, min(n, 4096) - len(idle))
        opened = await asyncio.gather(
            *(self._connect(key) for _ in range(missing)), return_exceptions=True
        )
        idle.extend(c for c in opened if isinstance(c, _Conn))
        return len(idle)

    async def _acquire(self, key: tuple[str, str, int]) -> tuple[_Conn, bool]:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                return conn, True
            self._all.discard(conn)
        return await self._connect(key), False

    async def _connect(self, key: tuple[str, str, int]) -> _Conn:
        scheme, host, port = key
        ctx = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            ctx = self._ssl
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, proto = await loop.create_connection(
                    lambda: _Conn(self, key), host, port, ssl=ctx
                )
        except TimeoutError:
            raise HTTPError(
                "timeout_connect",
                f"no connection to {host}:{port} within {self.connect_timeout:g} s",
            ) from None
        except OSError as e:
            raise HTTPError(
                "connect_error", f"cannot connect to {host}:{port}: {e.strerror or e}"
            ) from None
        self._all.add(proto)
        return proto

    def _release(self, conn: _Conn) -> None:
        if not conn.closed:
            self._idle.setdefault(conn.key, []).append(conn)


def _key(url: str) -> tuple[str, str, int]:
    u = urlsplit(url)
    scheme = u.scheme or "http"
    return scheme, u.hostname or "127.0.0.1", u.port or (443 if scheme == "https" else 80)


def collector(buf: bytearray, limit: int = 1 << 20, strict: bool = False) -> BodySink:
    """A sink that keeps up to ``limit`` body bytes in ``buf`` (small JSON / error bodies).
    Beyond the limit the rest is dropped, or with ``strict`` the response fails."""

    def sink(data: bytes, t: float) -> None:
        if len(buf) + len(data) > limit:
            if strict:
                raise HTTPError("response_too_large", f"response body larger than {limit} bytes")
            data = data[: limit - len(buf)]
        buf.extend(data)

    return sink
