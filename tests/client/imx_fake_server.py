"""A small OpenAI-compatible streaming server for the client's tests and accuracy script.

Real HTTP on 127.0.0.1. Every SSE quirk and fault the client must survive can be switched on
(``Behaviour``), and every event is stamped with its send time (``time.perf_counter()``, the
same system-wide monotonic clock the client uses), kept as server truth at ``GET /truth``.

Use in-process (``FakeServer(...).start()`` runs it on its own thread and loop) or as a separate
process: ``python imx_fake_server.py --port 0 --ttft 0.1 --tpot 0.02`` prints ``PORT <n>``.
Its words are "w0 w1 …", one word per token, so the client's word tokenizer counts them exactly.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Behaviour:
    ttft: float = 0.0  # seconds from request arrival to the first text event
    tpot: float = 0.0  # seconds between tokens
    tokens_per_event: int = 1
    output_tokens: int | None = None  # None: max_tokens from the request
    models: tuple[str, ...] = ("fake-model",)
    models_endpoint: bool = True  # serve /v1/models
    # SSE quirks
    crlf: bool = False
    no_space: bool = False  # "data:{...}" instead of "data: {...}"
    pings: bool = False  # ": ping" comment lines between events
    split_writes: bool = False  # each event written in small pieces
    role_chunk: bool = True  # chat: a role-only first chunk (and an empty-content one)
    role_chunk_delay: float = 0.0  # the role chunk comes this long before the first token
    reasoning: bool = False  # chat: text in delta.reasoning_content
    usage: bool = True  # a final usage-only chunk when stream_options.include_usage
    usage_offset: int = 0  # lie in usage.completion_tokens by this much
    done: bool = True  # send "data: [DONE]"
    json_body: bool = False  # ignore stream=true and answer one JSON document
    # faults (only for requests numbered >= faults_from: request 0 is the client's probe)
    faults_from: int = 1
    http_status: int = 200
    fail_every: int = 0  # every n-th request gets HTTP 500
    stall_after: int | None = None  # stop sending (connection open) after n tokens
    disconnect_after: int | None = None  # drop the connection after n tokens
    header_delay: float = 0.0  # delay before the response headers
    stream_error_after: int | None = None  # an in-stream {"error": …} event after n tokens
    empty_output: bool = False  # a stream with no text at all
    malformed_after: int | None = None  # after n tokens, an event whose JSON is cut off
    bad_utf8_after: int | None = None  # after n tokens, an event whose bytes are not UTF-8
    endless_line: bool = False  # after the first token, a data: line that never ends
    endless_events: bool = False  # text events without end, as fast as the client reads


@dataclass
class Truth:
    id: str
    arrival: float
    sends: list[float] = field(default_factory=list)  # send time of each text event
    tokens: list[int] = field(default_factory=list)  # tokens in each text event


class FakeServer:
    def __init__(self, behaviour: Behaviour | None = None, port: int = 0) -> None:
        self.b = behaviour or Behaviour()
        self.port = port
        self.truth: dict[str, Truth] = {}
        self.requests: list[dict[str, Any]] = []  # bodies received
        self.request_headers: list[dict[str, str]] = []  # their headers
        self.profile_calls: list[str] = []  # "start" / "stop", as POSTed
        self._seq = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    # ---- lifecycle -------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_get("/truth", self._truth)
        app.router.add_post("/truth/reset", self._truth_reset)
        app.router.add_post("/start_profile", self._profile)
        app.router.add_post("/stop_profile", self._profile)
        return app

    async def start_async(self) -> None:
        self._stop = asyncio.Event()
        self._runner = web.AppRunner(self.app(), shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=4096)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop_async(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> FakeServer:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.start_async())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self.stop_async())
            self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop and self._thread:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    # ---- handlers --------------------------------------------------------
    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _models(self, request: web.Request) -> web.Response:
        if not self.b.models_endpoint:
            raise web.HTTPNotFound()
        return web.json_response(
            {"object": "list", "data": [{"id": m, "object": "model"} for m in self.b.models]}
        )

    async def _truth(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                k: {"arrival": t.arrival, "sends": t.sends, "tokens": t.tokens}
                for k, t in self.truth.items()
            }
        )

    async def _profile(self, request: web.Request) -> web.Response:
        self.profile_calls.append(request.path.strip("/").split("_")[0])
        return web.Response(text="ok")

    async def _truth_reset(self, request: web.Request) -> web.Response:
        self.truth.clear()
        self.requests.clear()
        return web.json_response({"ok": True})

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        arrival = time.perf_counter()
        b = self.b
        body = await request.json()
        self.requests.append(body)
        self.request_headers.append(dict(request.headers))
        n = next(self._seq)
        if body.get("model") not in b.models:
            return web.json_response(
                {
                    "error": {
                        "message": f"The model `{body.get('model')}` does not exist.",
                        "type": "NotFoundError",
                        "code": 404,
                    }
                },
                status=404,
            )
        faulty = n >= b.faults_from
        if faulty and (b.http_status != 200 or (b.fail_every and n % b.fail_every == 0)):
            status = b.http_status if b.http_status != 200 else 500
            return web.json_response(
                {"error": {"message": "injected failure", "code": status}}, status=status
            )
        if faulty and b.header_delay:
            await self._sleep(b.header_delay)
        chat = request.path.endswith("/chat/completions")
        rid = f"cmpl-{n}"
        truth = self.truth[rid] = Truth(rid, arrival)
        out = b.output_tokens if b.output_tokens is not None else int(body.get("max_tokens", 16))
        if faulty and b.empty_output:
            out = 0
        if b.json_body:
            await self._sleep_until(arrival + b.ttft + b.tpot * max(0, out - 1))
            text = "".join(f"w{i} " for i in range(out))
            truth.sends.append(time.perf_counter())
            truth.tokens.append(out)
            choice = (
                {"index": 0, "message": {"role": "assistant", "content": text}}
                if chat
                else {"index": 0, "text": text}
            )
            return web.json_response(
                {
                    "id": rid,
                    "choices": [choice],
                    "usage": {"prompt_tokens": _words(body), "completion_tokens": out},
                }
            )

        obj = "chat.completion.chunk" if chat else "text_completion"
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)

        async def emit(payload: dict[str, Any] | str | bytes) -> None:
            if isinstance(payload, dict):
                payload = json.dumps(payload)
            data = payload if isinstance(payload, bytes) else payload.encode()
            nl = b"\r\n" if b.crlf else b"\n"
            sep = b"data:" if b.no_space else b"data: "
            enc = (b": ping" + nl if b.pings else b"") + sep + data + nl + nl
            if b.split_writes:
                for i in range(0, len(enc), 7):
                    await resp.write(enc[i : i + 7])
                    await asyncio.sleep(0.0005)
            else:
                await resp.write(enc)

        if chat and b.role_chunk:
            await emit(
                {
                    "id": rid,
                    "object": obj,
                    "choices": [{"index": 0, "delta": {"role": "assistant"}}],
                }
            )
            await emit(
                {"id": rid, "object": obj, "choices": [{"index": 0, "delta": {"content": ""}}]}
            )
            if b.role_chunk_delay:
                await self._sleep(b.role_chunk_delay)
        sent = 0
        t_first = arrival + b.ttft
        event_no = 0
        if faulty and (b.endless_line or b.endless_events):
            await self._endless(resp, emit, rid, obj)
            return resp
        while sent < out:
            if faulty and b.stall_after is not None and sent >= b.stall_after:
                await self._sleep(3600)
                return resp
            if faulty and b.disconnect_after is not None and sent >= b.disconnect_after:
                assert request.transport is not None
                request.transport.close()
                return resp
            if faulty and b.stream_error_after is not None and sent >= b.stream_error_after:
                await emit({"error": {"message": "injected stream error", "code": 500}})
                break
            if faulty and sent == b.malformed_after:
                await emit(f'{{"id": "{rid}", "object": "{obj}", "choices": [{{"index": 0, "te')
            if faulty and sent == b.bad_utf8_after:
                await emit(
                    f'{{"id": "{rid}", "object": "{obj}", "choices": [{{"index": 0, "text": "'.encode()
                    + b'\xff\xfe"}]}'
                )
            k = min(b.tokens_per_event, out - sent)
            text = "".join(f"w{sent + i} " for i in range(k))
            # the event with its last token index `sent + k - 1` is due at ttft + that * tpot
            await self._sleep_until(t_first + b.tpot * (sent + k - 1))
            if chat:
                key = "reasoning_content" if b.reasoning else "content"
                chunk: dict[str, Any] = {
                    "id": rid,
                    "object": obj,
                    "choices": [{"index": 0, "delta": {key: text}}],
                }
            else:
                chunk = {"id": rid, "object": obj, "choices": [{"index": 0, "text": text}]}
            t_send = time.perf_counter()
            chunk["t_send"] = t_send
            await emit(chunk)
            truth.sends.append(t_send)
            truth.tokens.append(k)
            sent += k
            event_no += 1
        usage_out = sent + b.usage_offset
        if b.usage and (body.get("stream_options") or {}).get("include_usage"):
            await emit(
                {
                    "id": rid,
                    "object": obj,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": _words(body),
                        "completion_tokens": usage_out,
                        "total_tokens": _words(body) + usage_out,
                    },
                }
            )
        if b.done:
            await emit("[DONE]")
        await resp.write_eof()
        return resp

    async def _endless(self, resp: web.StreamResponse, emit: Any, rid: str, obj: str) -> None:
        """One token, then a line or a stream of events that never ends, until the client
        hangs up or the server stops."""
        b = self.b
        await emit({"id": rid, "object": obj, "choices": [{"index": 0, "text": "w0 "}]})
        if b.endless_line:
            await resp.write(b'data: {"id": "' + rid.encode() + b'", "choices": [{"text": "')
        piece = b"x" * 65536
        assert self._stop is not None
        i = 1
        try:
            while not self._stop.is_set():
                if b.endless_line:
                    await resp.write(piece)
                else:
                    await emit(
                        {"id": rid, "object": obj, "choices": [{"index": 0, "text": f"w{i} "}]}
                    )
                    i += 1
                await asyncio.sleep(0)  # let the loop serve the hang-up
        except (ConnectionError, RuntimeError):
            pass  # the client closed the connection: that is the expected end

    async def _sleep(self, s: float) -> None:
        assert self._stop is not None
        try:
            await asyncio.wait_for(self._stop.wait(), s)
        except TimeoutError:
            pass

    async def _sleep_until(self, t: float) -> None:
        delay = t - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)


def _words(body: dict[str, Any]) -> int:
    if "prompt" in body:
        return len(str(body["prompt"]).split())
    return sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))


def _main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft", type=float, default=0.0)
    p.add_argument("--tpot", type=float, default=0.0)
    p.add_argument("--tokens-per-event", type=int, default=1)
    args = p.parse_args()

    async def serve() -> None:
        srv = FakeServer(
            Behaviour(ttft=args.ttft, tpot=args.tpot, tokens_per_event=args.tokens_per_event),
            port=args.port,
        )
        await srv.start_async()
        print(f"PORT {srv.port}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await srv.stop_async()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    _main()
