#!/usr/bin/env python
"""A lean OpenAI-compatible streaming server for accuracy measurements (run as its own process).

tests/client/imx_fake_server.py (aiohttp) can emit every quirk, but at hundreds of synchronized
streams its per-event overhead delays the *noticing of new requests* by milliseconds, which
would show up as client TTFT "error". This one is built like an engine: an asyncio Protocol per
connection reads with recvmsg and takes the *kernel's* receive time of a request (SO_TIMESTAMPNS)
as its arrival, and one scheduler emits every due event of every stream (no task per stream).

Every text event carries ``t_send`` (time.perf_counter() just before the write; CLOCK_MONOTONIC,
the same clock in every process) and the server keeps per request: arrival, send times, tokens
per event → ``GET /truth``; ``POST /truth/reset`` clears it. One word ("w<i> ") per token; a
usage chunk when asked; [DONE]. Keep-alive HTTP/1.1, chunked responses.

    python imx_stamp_server.py --port 0 --ttft 0.2 --tpot 0.04   # prints "PORT <n>"
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import json
import socket
import struct
import time
from typing import Any

MODEL = "fake-model"


class Stream:
    __slots__ = ("chat", "conn", "out", "rid", "sends", "sent", "tokens", "usage")

    def __init__(self, conn: Conn, rid: str, out: int, chat: bool, usage: bool) -> None:
        self.conn, self.rid, self.out, self.chat, self.usage = conn, rid, out, chat, usage
        self.sent = 0
        self.sends: list[float] = []
        self.tokens: list[int] = []


class Engine:
    """Emits each stream's events on schedule: event j (last token i) is due at
    arrival + ttft + i·tpot. One heap, one timer: a decode step for all streams at once."""

    def __init__(self, ttft: float, tpot: float, k: int) -> None:
        self.ttft, self.tpot, self.k = ttft, tpot, k
        self.heap: list[tuple[float, int, Stream, float]] = []
        self.seq = itertools.count()
        self.timer: asyncio.TimerHandle | None = None
        self.truth: dict[str, dict[str, Any]] = {}
        self.ids = itertools.count()

    def start(
        self, conn: Conn, body: dict[str, Any], arrival: float, loop_arrival: float, chat: bool
    ) -> None:
        """``arrival``: kernel receive time (truth); the schedule starts at ``loop_arrival``,
        when this process noticed the request, like a real engine's."""
        rid = f"cmpl-{next(self.ids)}"
        st = Stream(
            conn,
            rid,
            int(body.get("max_tokens") or body.get("max_completion_tokens") or 16),
            chat,
            bool((body.get("stream_options") or {}).get("include_usage")),
        )
        self.truth[rid] = {
            "arrival": arrival,
            "arrival_loop": loop_arrival,
            "sends": st.sends,
            "tokens": st.tokens,
        }
        conn.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        if chat:
            conn.event(
                f'{{"id":"{rid}","object":"chat.completion.chunk","model":"{MODEL}",'
                f'"choices":[{{"index":0,"delta":{{"role":"assistant"}}}}]}}'
            )
        self.push(st, loop_arrival + self.ttft)

    def push(self, st: Stream, first_due: float) -> None:
        k = min(self.k, st.out - st.sent)
        heapq.heappush(
            self.heap, (first_due + self.tpot * (st.sent + k - 1), next(self.seq), st, first_due)
        )
        self.arm()

    def arm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.heap:
            delay = max(0.0, self.heap[0][0] - time.perf_counter())
            self.timer = asyncio.get_running_loop().call_later(delay, self.step)

    def step(self) -> None:
        self.timer = None
        heap = self.heap
        while heap and heap[0][0] <= time.perf_counter():
            _, _, st, first_due = heapq.heappop(heap)
            if st.conn.closed:
                continue
            k = min(self.k, st.out - st.sent)
            text = "".join(f"w{st.sent + i} " for i in range(k))
            t = time.perf_counter()
            if st.chat:
                st.conn.event(
                    f'{{"id":"{st.rid}","object":"chat.completion.chunk","model":"{MODEL}",'
                    f'"t_send":{t!r},"choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}'
                )
            else:
                st.conn.event(
                    f'{{"id":"{st.rid}","object":"text_completion","model":"{MODEL}",'
                    f'"t_send":{t!r},"choices":[{{"index":0,"text":"{text}"}}]}}'
                )
            st.sends.append(t)
            st.tokens.append(k)
            st.sent += k
            if st.sent < st.out:
                k2 = min(self.k, st.out - st.sent)
                heapq.heappush(
                    heap,
                    (first_due + self.tpot * (st.sent + k2 - 1), next(self.seq), st, first_due),
                )
            else:
                if st.usage:
                    obj = "chat.completion.chunk" if st.chat else "text_completion"
                    st.conn.event(
                        f'{{"id":"{st.rid}","object":"{obj}","model":"{MODEL}","choices":[],'
                        f'"usage":{{"prompt_tokens":0,"completion_tokens":{st.sent}}}}}'
                    )
                st.conn.event("[DONE]")
                st.conn.write(b"0\r\n\r\n")
        self.arm()


# Linux: SO_TIMESTAMPNS = SCM_TIMESTAMPNS = 35 (Python does not export the constant).
SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")


class Conn:
    """One client connection on a raw non-blocking socket. Reading with recvmsg gives the
    kernel's receive time of the bytes (SO_TIMESTAMPNS): the server's truth for when a request
    arrived, however busy this process was at that moment."""

    def __init__(self, sock: socket.socket, engine: Engine, offset: float) -> None:
        self.sock, self.engine, self.offset = sock, engine, offset
        self.loop = asyncio.get_running_loop()
        self.buf = b""
        self.first_rx = 0.0  # kernel stamp of the first byte of the request being read
        self.out = bytearray()
        self.closed = False
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.loop.add_reader(sock, self.on_readable)

    def on_readable(self) -> None:
        loop_arrival = time.perf_counter()
        try:
            data, anc, _, _ = self.sock.recvmsg(1 << 18, socket.CMSG_SPACE(_TIMESPEC.size))
        except BlockingIOError:
            return
        except OSError:
            self.close()
            return
        if not data:
            self.close()
            return
        kernel = loop_arrival
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = _TIMESPEC.unpack(payload[: _TIMESPEC.size])
                kernel = sec + nsec * 1e-9 - self.offset  # realtime → perf_counter domain
        if not self.buf:
            self.first_rx = kernel
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1").split("\r\n")
            headers = {
                k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in head[1:])
            }
            n = int(headers.get("content-length", "0") or 0)
            if len(self.buf) < end + 4 + n:
                return
            body = self.buf[end + 4 : end + 4 + n]
            self.buf = self.buf[end + 4 + n :]
            method, path, _ = head[0].split(" ", 2)
            self.route(method, path, body, self.first_rx, loop_arrival)
            self.first_rx = kernel

    def route(
        self, method: str, path: str, body: bytes, arrival: float, loop_arrival: float
    ) -> None:
        eng = self.engine
        if method == "POST" and path.endswith("/completions"):
            eng.start(
                self, json.loads(body), arrival, loop_arrival, path.endswith("/chat/completions")
            )
        elif path == "/v1/models":
            self.reply({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        elif path == "/truth":
            self.reply(eng.truth)
        elif path == "/truth/reset":
            eng.truth.clear()
            self.reply({"ok": True})
        elif path == "/health":
            self.reply({"ok": True})
        else:
            self.reply({"error": {"message": "not found"}}, "404 Not Found")

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        if self.out:
            self.out += data
            return
        try:
            n = self.sock.send(data)
        except BlockingIOError:
            n = 0
        except OSError:
            self.close()
            return
        if n < len(data):
            self.out += data[n:]
            self.loop.add_writer(self.sock, self.on_writable)

    def on_writable(self) -> None:
        try:
            n = self.sock.send(self.out)
        except BlockingIOError:
            return
        except OSError:
            self.close()
            return
        del self.out[:n]
        if not self.out:
            self.loop.remove_writer(self.sock)

    def event(self, data: str) -> None:
        raw = f"data: {data}\n\n".encode()
        self.write(b"%x\r\n%s\r\n" % (len(raw), raw))

    def reply(self, obj: Any, status: str = "200 OK") -> None:
        data = json.dumps(obj).encode()
        self.write(
            f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.loop.remove_reader(self.sock)
            self.loop.remove_writer(self.sock)
            self.sock.close()


async def serve(port: int, ttft: float, tpot: float, k: int) -> None:
    engine = Engine(ttft, tpot, k)
    loop = asyncio.get_running_loop()
    offset = time.time() - time.perf_counter()
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(4096)
    lsock.setblocking(False)

    def accept() -> None:
        while True:
            try:
                sock, _ = lsock.accept()
            except BlockingIOError:
                return
            Conn(sock, engine, offset)

    loop.add_reader(lsock, accept)
    print(f"PORT {lsock.getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft", type=float, default=0.0)
    p.add_argument("--tpot", type=float, default=0.0)
    p.add_argument("--tokens-per-event", type=int, default=1)
    a = p.parse_args()
    try:
        asyncio.run(serve(a.port, a.ttft, a.tpot, a.tokens_per_event))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
