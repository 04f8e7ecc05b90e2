"""The OpenAI-compatible HTTP front door of the simulated deployment (aiohttp): its routes, and
serving them (on an event loop, or on a background thread).

Endpoints: /v1/models, /v1/completions, /v1/chat/completions (streaming or not), /health,
/metrics (Prometheus text, vLLM metric names: server_metrics.py), /tokenize,
/reset_prefix_cache, /flush_cache and /sim/config. Requests (read by server_requests.py) go to
the deployment on a real-time kernel; every generated token is streamed when the step that
produced it ends (server_answers.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
import time
import uuid
from dataclasses import dataclass, field

from aiohttp import web

from .clock import RealtimeKernel
from .config import SimConfig
from .engine import Deployment, EngineRequest
from .faults import Fault as FaultSpec
from .faults import parse_faults
from .server_answers import native_answer, stream_answer, whole_answer
from .server_metrics import prometheus_text
from .server_requests import (
    ApiError,
    error_response,
    parse_request,
    read_json,
    request_faults,
    session_id,
)
from .tokens import PromptTokenizer, chat_text

log = logging.getLogger(__name__)

CRASH_EXIT_CODE = 3


@dataclass
class ServerOptions:
    time_scale: float = 1.0
    faults: list[FaultSpec] = field(default_factory=list)
    seed: int = 0
    tokenizer_dir: str | None = None


class SimServer:
    def __init__(self, config: SimConfig, options: ServerOptions | None = None):
        self.config = config
        self.options = options or ServerOptions()
        self.kernel = RealtimeKernel(self.options.time_scale)
        self.deployment = Deployment(config, self.kernel, seed=self.options.seed)
        self.tokenizer = PromptTokenizer(self.options.tokenizer_dir)
        self.rng = random.Random(self.options.seed)
        self.started = time.monotonic()
        self.generation_requests = 0
        self.success_total = 0
        self.failed_total = 0
        self._kernel_task: asyncio.Task[None] | None = None
        faults = self.options.faults
        self.slow_start_s = max((f.seconds for f in faults if f.kind == "slow_start"), default=0.0)
        self.crash_after = min((f.n for f in faults if f.kind == "crash_after"), default=None)

    # ------------------------------------------------------------------ app

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_post("/generate", self.native_generate)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_post("/tokenize", self.tokenize)
        for path in ("/reset_prefix_cache", "/flush_cache"):
            app.router.add_post(path, self.reset_prefix_cache)
            app.router.add_get(path, self.reset_prefix_cache)
        app.router.add_get("/sim/config", self.sim_config)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, app: web.Application) -> None:
        self._kernel_task = self.kernel.start()
        self.started = time.monotonic()

    async def _on_cleanup(self, app: web.Application) -> None:
        if self._kernel_task is not None:
            self._kernel_task.cancel()

    def _starting(self) -> bool:
        return time.monotonic() - self.started < self.slow_start_s

    # ------------------------------------------------------------------ small endpoints

    async def health(self, request: web.Request) -> web.Response:
        if self._starting():
            return web.Response(status=503, text="starting")
        return web.Response(status=200)

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{
            "id": self.config.served_model_name, "object": "model", "created": int(time.time()),
            "owned_by": "infermatrix-sim", "root": self.config.served_model_name,
            "max_model_len": self.config.max_model_len,
        }]})

    async def sim_config(self, request: web.Request) -> web.Response:
        return web.json_response(self.config.summary())

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await read_json(request)
        try:
            text = chat_text(body["messages"]) if "messages" in body else body.get("prompt")
        except ValueError as exc:
            return error_response(400, str(exc))
        if not isinstance(text, str):
            return error_response(400, "'prompt' (a string) or 'messages' is required")
        ids = self.tokenizer.ids(text)
        return web.json_response({"count": len(ids), "max_model_len": self.config.max_model_len,
                                  "tokens": ids})

    async def reset_prefix_cache(self, request: web.Request) -> web.Response:
        dropped = self.deployment.reset_prefix_cache()
        log.info("prefix cache reset: %d cached blocks dropped", dropped)
        return web.json_response({"status": "ok", "dropped_blocks": dropped})

    async def metrics(self, request: web.Request) -> web.Response:
        text = prometheus_text(self.config, self.deployment, self.success_total, self.failed_total)
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    # ------------------------------------------------------------------ generation

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    async def native_generate(self, request: web.Request) -> web.StreamResponse:
        """SGLang's native /generate: {"text", "sampling_params": {"max_new_tokens", …},
        "stream"}; streamed events carry the whole text so far and ``meta_info``."""
        return await self._generate(request, chat=False, native=True)

    async def _generate(self, request: web.Request, chat: bool,
                        native: bool = False) -> web.StreamResponse:
        try:
            if self._starting():
                raise ApiError(503, "the server is starting", "ServiceUnavailableError")
            self.generation_requests += 1
            if self.crash_after is not None and self.generation_requests > self.crash_after:
                log.error("fault crash_after: exiting after %d requests", self.crash_after)
                os._exit(CRASH_EXIT_CODE)
            body = await read_json(request)
            faults = request_faults(request, self.options.faults, self.rng)
            if faults.gen_fail:
                raise ApiError(500, "generation failed (simulated fault)", "InternalServerError")
            if faults.error is not None:
                status = faults.error.status
                kind = {429: "RateLimitError", 503: "ServiceUnavailableError"}.get(status, "InternalServerError")
                raise ApiError(status, f"simulated HTTP {status}", kind)
            ereq, stream, include_usage = parse_request(body, chat, self.config, self.tokenizer,
                                                        native)
            ereq = EngineRequest(ereq.prompt_tokens, ereq.max_tokens, ereq.hashes,
                                 session_id(request, body))
            reason = self.deployment.reject_reason(ereq)
            if reason:
                raise ApiError(400, reason)
        except ApiError as exc:
            self.failed_total += 1
            return error_response(exc.status, exc.message, exc.kind)

        queue: asyncio.Queue[int] = asyncio.Queue()
        self.kernel.now = self.kernel.model_now()
        rec = self.deployment.submit(ereq, lambda r, n, t: queue.put_nowait(n))
        ident = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        try:
            if native:
                return await native_answer(request, rec, queue, ident, stream)
            if stream:
                return await stream_answer(request, rec, queue, ident, chat, include_usage, faults,
                                           config=self.config, deployment=self.deployment)
            return await whole_answer(rec, queue, ident, chat, self.config.served_model_name)
        finally:
            if not rec.done:  # the client went away, or the handler failed
                self.deployment.abort(rec)
            if rec.aborted:
                self.failed_total += 1
            else:
                self.success_total += 1


async def serve(config: SimConfig, host: str, port: int, options: ServerOptions | None = None,
                ready: asyncio.Event | None = None) -> None:
    """Serve until cancelled."""
    server = SimServer(config, options)
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=1024)
    await site.start()
    log.info("simulated %s on %s×%s (%s) listening on http://%s:%d", config.model, config.total_gpus,
             config.hardware, config.precision, host, port)
    if ready is not None:
        ready.set()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def parse_fault_specs(specs: list[str]) -> list[FaultSpec]:
    out: list[FaultSpec] = []
    for s in specs:
        out += parse_faults(s)
    return out


class ServerThread:
    """The server on its own event loop in a background thread (tests, embedding).

        with ServerThread(config) as srv:
            urllib.request.urlopen(srv.base_url + "/health")
    """

    def __init__(self, config: SimConfig, options: ServerOptions | None = None,
                 host: str = "127.0.0.1", port: int = 0):
        self.server = SimServer(config, options)
        self.host, self.port = host, port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServerThread:
        started = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._setup())
            except BaseException as exc:  # report to the starting thread
                errors.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())  # type: ignore[union-attr]
            loop.close()

        self._thread = threading.Thread(target=run, name="sim-server", daemon=True)
        self._thread.start()
        started.wait(30)
        if errors:
            raise errors[0]
        return self

    async def _setup(self) -> None:
        self._runner = web.AppRunner(self.server.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024)
        await site.start()
        self.port = self._runner.addresses[0][1]  # the bound port when asked for port 0

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
