"""The HTTP/1.1 client: chunked framing at every split point, close-delimited bodies,
1xx interim responses and a keep-alive pool without a cap, against raw asyncio servers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from infermatrix.client.http import HTTPClient, HTTPError, _Chunked, collector

BODY = b'data: {"x": 1}\n\ndata: [DONE]\n\n'
CHUNKED = (
    b"5;ext=1\r\ndata:\r\n"
    + b"%x\r\n%s\r\n" % (len(BODY) - 5, BODY[5:])
    + b"0\r\nX-Trailer: 1\r\n\r\n"
)


def test_chunked_decoder_at_every_split() -> None:
    for cut in range(len(CHUNKED) + 1):
        d = _Chunked()
        out = d.feed(CHUNKED[:cut]) + d.feed(CHUNKED[cut:])
        assert out == b"data:" + BODY[5:] and d.done, cut


def test_chunked_decoder_rejects_garbage() -> None:
    with pytest.raises(HTTPError):
        _Chunked().feed(b"zz\r\n")


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def with_server(handler: Handler, body: Callable[[str], Awaitable[None]]) -> None:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await body(f"http://127.0.0.1:{port}")
    finally:
        server.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    n = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    return head + await reader.readexactly(n)


def test_close_delimited_body_and_interim_response() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
        )
        for i in range(0, len(BODY), 3):
            w.write(BODY[i : i + 3])
            await w.drain()
        w.close()

    async def body(url: str) -> None:
        buf = bytearray()
        async with HTTPClient(5, 5) as c:
            resp = await c.request("POST", url + "/v1/completions", b"{}", lambda r: collector(buf))
        assert resp.status == 200 and bytes(buf) == BODY and not resp.keep_alive

    asyncio.run(with_server(handler, body))


def test_keep_alive_reuse_and_no_connection_cap() -> None:
    conns = 0

    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        nonlocal conns
        conns += 1
        try:
            while True:
                await read_request(r)
                await asyncio.sleep(0.3)  # keep all requests in flight at once
                w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await w.drain()
        except asyncio.IncompleteReadError:
            w.close()

    async def body(url: str) -> None:
        async with HTTPClient(5, 5) as c:

            async def one() -> bytes:
                buf = bytearray()
                await c.request("GET", url + "/x", None, lambda r: collector(buf))
                return bytes(buf)

            assert await asyncio.gather(*(one() for _ in range(150))) == [b"ok"] * 150
            assert conns == 150  # no cap at 100
            assert await asyncio.gather(*(one() for _ in range(150))) == [b"ok"] * 150
            assert conns == 150  # all reused

    asyncio.run(with_server(handler, body))


def test_truncated_chunked_body_is_a_disconnect() -> None:
    async def handler(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        await read_request(r)
        w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + CHUNKED[:20])
        await w.drain()
        w.close()

    async def body(url: str) -> None:
        async with HTTPClient(5, 5) as c:
            with pytest.raises(HTTPError) as e:
                await c.request("GET", url, None, lambda r: collector(bytearray()))
            assert e.value.kind == "disconnect"

    asyncio.run(with_server(handler, body))


def test_chunked_decoder_many_chunks_in_one_read_with_extensions() -> None:
    pieces = [b"data: %d\n\n" % i for i in range(20)]
    raw = b"".join(
        b"%x%s\r\n%s\r\n" % (len(p), b";x=1" if i % 3 else b"", p) for i, p in enumerate(pieces)
    )
    raw += b"0\r\n\r\n"
    for cut in range(0, len(raw) + 1, 7):
        d = _Chunked()
        assert d.feed(raw[:cut]) + d.feed(raw[cut:]) == b"".join(pieces) and d.done, cut


@pytest.mark.parametrize("line", [b"-5", b"0x5", b"+5", b"5_0", b" ", b"f" * 17])
def test_chunk_size_lines_that_are_not_hex_are_rejected(line: bytes) -> None:
    with pytest.raises(HTTPError):
        _Chunked().feed(line + b"\r\nhello\r\n")
