"""The OpenAI-compatible HTTP front door of the simulated deployment (aiohttp).

Endpoints: /v1/models, /v1/completions, /v1/chat/completions (streaming or not), /health,
/metrics (Prometheus text, vLLM metric names), /tokenize, /reset_prefix_cache, /flush_cache and
/sim/config. Requests go to the deployment on a real-time kernel; every generated token is
streamed when the step that produced it ends.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .clock import RealtimeKernel
from .config import SimConfig
from .engine import Deployment, EngineRequest, RequestRecord
from .faults import HEADER, FaultError, RequestFaults, parse_faults
from .faults import Fault as FaultSpec
from .prefix_cache import chain_hashes
from .tokens import PromptTokenizer, chat_text, output_text

log = logging.getLogger(__name__)

DEFAULT_COMPLETION_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
DEFAULT_CHAT_MAX_TOKENS = 1024  # no EOS in a simulation: a chat without max_tokens stops here
CRASH_EXIT_CODE = 3


@dataclass
class ServerOptions:
    time_scale: float = 1.0
    faults: list[FaultSpec] = field(default_factory=list)
    seed: int = 0
    tokenizer_dir: str | None = None


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str = "BadRequestError"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def error_response(status: int, message: str, kind: str = "BadRequestError") -> web.Response:
    return web.json_response(
        {"object": "error", "error": {"message": message, "type": kind, "code": status},
         "message": message, "type": kind, "code": status}, status=status)


def text_choice(text: str, finish: str | None, chat: bool) -> dict[str, Any]:
    if chat:
        return {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": finish}
    return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}


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
        body = await self._json(request)
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
        return web.Response(text=self.prometheus_text(), content_type="text/plain", charset="utf-8")

    def prometheus_text(self) -> str:
        insts = self.deployment.all_instances
        cores = [i.core for i in insts]
        pools = [c.pool for c in cores]
        label = f'model_name="{self.config.served_model_name}"'
        queries = sum(p.query_tokens for p in pools)
        hits = sum(p.hit_tokens for p in pools)
        used = sum(p.used_blocks for p in pools)
        total = sum(p.num_blocks for p in pools) or 1
        rows: list[tuple[str, str, str, float]] = [
            ("vllm:num_requests_running", "gauge", "Requests in the running batch",
             sum(len(c.running) for c in cores)),
            ("vllm:num_requests_waiting", "gauge", "Requests waiting to be scheduled",
             sum(len(c.waiting) for c in cores)),
            ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage (1 = full)", used / total),
            ("vllm:gpu_cache_usage_perc", "gauge", "KV-cache usage (1 = full), legacy name",
             used / total),
            ("vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache",
             queries),
            ("vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache", hits),
            ("sim:prefix_cache_hit_rate", "gauge", "Prefix-cache hits / queries since start",
             hits / queries if queries else 0.0),
            ("vllm:prompt_tokens_total", "counter", "Prompt tokens admitted",
             sum(c.prompt_tokens_total for c in cores)),
            ("vllm:generation_tokens_total", "counter", "Tokens generated",
             sum(c.generation_tokens_total for c in cores)),
            ("vllm:num_preemptions_total", "counter", "Sequences preempted for lack of KV cache",
             sum(c.preemptions_total for c in cores)),
            ("vllm:request_success_total", "counter", "Requests finished", self.success_total),
            ("sim:request_failed_total", "counter", "Requests rejected, aborted or faulted",
             self.failed_total),
            ("sim:steps_total", "counter", "Engine steps", sum(c.steps_total for c in cores)),
            ("sim:kv_transfers_total", "counter", "Prefill→decode KV handoffs",
             self.deployment.kv_transfers),
        ]
        out: list[str] = []
        for name, kind, help_text, value in rows:
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name}{{{label}}} {value:g}"]
        out += ["# HELP sim:instance_requests_running Running requests per instance",
                "# TYPE sim:instance_requests_running gauge"]
        out += [f'sim:instance_requests_running{{{label},instance="{i.name}"}} {len(i.core.running)}'
                for i in insts]
        return "\n".join(out) + "\n"

    # ------------------------------------------------------------------ generation

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    async def native_generate(self, request: web.Request) -> web.StreamResponse:
        """SGLang's native /generate: {"text", "sampling_params": {"max_new_tokens", …},
        "stream"}; streamed events carry the whole text so far and ``meta_info``."""
        return await self._generate(request, chat=False, native=True)

    async def _json(self, request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ApiError(400, "the request body is not valid JSON") from None
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        return body

    def _faults(self, request: web.Request) -> RequestFaults:
        faults = list(self.options.faults)
        header = request.headers.get(HEADER)
        if header:
            try:
                faults += parse_faults(header)
            except FaultError as exc:
                raise ApiError(400, f"{HEADER}: {exc}") from None
        return RequestFaults.resolve(faults, self.rng.random())

    def _parse(self, body: dict[str, Any], chat: bool, native: bool = False,
               ) -> tuple[EngineRequest, bool, bool]:
        if native:  # SGLang's /generate as the completions body it stands for
            sampling = body.get("sampling_params") or {}
            if not isinstance(sampling, dict):
                raise ApiError(400, "sampling_params must be an object")
            body = {"prompt": body.get("text"), "max_tokens": sampling.get("max_new_tokens"),
                    "stream": body.get("stream", False)}
        model = body.get("model")
        if model is not None and model != self.config.served_model_name:
            raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError")
        if body.get("n", 1) != 1:
            raise ApiError(400, "only n=1 is supported")
        if chat:
            try:
                text = chat_text(body.get("messages"))
            except ValueError as exc:
                raise ApiError(400, str(exc)) from None
            tokens = self.tokenizer.tokens(text)
        else:
            prompt = body.get("prompt")
            if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
                prompt = prompt[0]
            if isinstance(prompt, str):
                tokens = self.tokenizer.tokens(prompt)
            elif isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
                tokens = prompt  # token ids
            else:
                raise ApiError(400, "'prompt' must be a string or a list of token ids")
        max_tokens = body.get("max_completion_tokens") if chat else None
        if max_tokens is None:
            max_tokens = body.get("max_tokens")
        room = self.config.max_model_len - len(tokens)
        if max_tokens is None:
            max_tokens = min(room, DEFAULT_CHAT_MAX_TOKENS if chat else DEFAULT_COMPLETION_MAX_TOKENS)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ApiError(400, "max_tokens must be a positive integer")
        min_tokens = body.get("min_tokens", 0)
        if not isinstance(min_tokens, int) or min_tokens < 0 or min_tokens > max_tokens:
            raise ApiError(400, "min_tokens must be an integer between 0 and max_tokens")
        stream = bool(body.get("stream", False))
        opts = body.get("stream_options") or {}
        include_usage = bool(opts.get("include_usage")) if isinstance(opts, dict) else False
        hashes = chain_hashes(tokens, self.config.block_size) if self.config.prefix_caching or \
            (self.config.prefill and self.config.prefill.prefix_caching) else ()
        return EngineRequest(len(tokens), max_tokens, hashes, None), stream, include_usage

    @staticmethod
    def _session(request: web.Request, body: dict[str, Any]) -> str | None:
        for h in ("X-Session-ID", "X-Dynamo-Session-ID", "X-Conversation-ID"):
            if request.headers.get(h):
                return request.headers[h]
        params = body.get("disaggregated_params")
        if isinstance(params, dict) and params.get("conversation_id") is not None:
            return str(params["conversation_id"])
        user = body.get("user")
        return str(user) if user else None

    async def _generate(self, request: web.Request, chat: bool,
                        native: bool = False) -> web.StreamResponse:
        try:
            if self._starting():
                raise ApiError(503, "the server is starting", "ServiceUnavailableError")
            self.generation_requests += 1
            if self.crash_after is not None and self.generation_requests > self.crash_after:
                log.error("fault crash_after: exiting after %d requests", self.crash_after)
                os._exit(CRASH_EXIT_CODE)
            body = await self._json(request)
            faults = self._faults(request)
            if faults.gen_fail:
                raise ApiError(500, "generation failed (simulated fault)", "InternalServerError")
            if faults.error is not None:
                status = faults.error.status
                kind = {429: "RateLimitError", 503: "ServiceUnavailableError"}.get(status, "InternalServerError")
                raise ApiError(status, f"simulated HTTP {status}", kind)
            ereq, stream, include_usage = self._parse(body, chat, native)
            ereq = EngineRequest(ereq.prompt_tokens, ereq.max_tokens, ereq.hashes,
                                 self._session(request, body))
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
                return await self._native(request, rec, queue, ident, stream)
            if stream:
                return await self._stream(request, rec, queue, ident, chat, include_usage, faults)
            return await self._whole(rec, queue, ident, chat)
        finally:
            if not rec.done:  # the client went away, or the handler failed
                self.deployment.abort(rec)
            if rec.aborted:
                self.failed_total += 1
            else:
                self.success_total += 1

    @staticmethod
    def _usage(rec: RequestRecord) -> dict[str, Any]:
        return {"prompt_tokens": rec.prompt_tokens, "completion_tokens": rec.completion_tokens,
                "total_tokens": rec.prompt_tokens + rec.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": rec.cached_tokens}}

    async def _whole(self, rec: RequestRecord, queue: asyncio.Queue[int], ident: str,
                     chat: bool) -> web.Response:
        while not rec.done:
            await queue.get()
        text = output_text(0, rec.completion_tokens)
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length", "logprobs": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        return web.json_response({
            "id": ident, "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()), "model": self.config.served_model_name,
            "choices": [choice], "usage": self._usage(rec)})

    async def _native(self, request: web.Request, rec: RequestRecord, queue: asyncio.Queue[int],
                      ident: str, stream: bool) -> web.StreamResponse:
        """SGLang's /generate answer: one event per engine step with the text so far (no faults
        are injected here)."""
        def payload(done: bool) -> dict[str, Any]:
            meta = {"id": ident, "prompt_tokens": rec.prompt_tokens,
                    "completion_tokens": rec.completion_tokens, "cached_tokens": rec.cached_tokens,
                    "finish_reason": {"type": "length"} if done else None}
            return {"text": output_text(0, rec.completion_tokens), "meta_info": meta}

        if not stream:
            while not rec.done:
                await queue.get()
            return web.json_response(payload(True))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        done = False
        while not done:  # one item per engine step, the last one included
            await queue.get()
            while not queue.empty():
                queue.get_nowait()
            done = rec.done
            body = json.dumps(payload(done), separators=(",", ":")).encode()
            await resp.write(b"data: " + body + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _stream(self, request: web.Request, rec: RequestRecord, queue: asyncio.Queue[int],
                      ident: str, chat: bool, include_usage: bool,
                      faults: RequestFaults) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        model = self.config.served_model_name

        def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            payload = {"id": ident, "object": obj, "created": created, "model": model,
                       "choices": choices, **extra}
            return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

        # the hot path: every token event is this template with the text filled in (the
        # generated words need no JSON escaping), instead of a json.dumps per token
        head, _, tail = event([text_choice("@TEXT@", None, chat)]).partition(b"@TEXT@")

        def token_event(text: str) -> bytes:
            return head + text.encode() + tail

        if chat:  # real servers open a chat stream with the assistant role and no text
            await resp.write(event([{"index": 0, "delta": {"role": "assistant", "content": ""},
                                     "logprobs": None, "finish_reason": None}]))
        sent = 0
        pending = 0
        interval = self.config.stream_interval
        stalled = malformed = False
        while True:
            pending += await queue.get()  # one item per engine step: one event per step
            while not queue.empty():  # behind (a loaded event loop): merge, as engines do
                pending += queue.get_nowait()
            final = rec.done
            # one event per engine step; the multi_token fault cuts exactly N tokens per event;
            # an engine with a stream interval (TensorRT-LLM) sends the first token at once,
            # then every `stream_interval` tokens
            size = (faults.chunk_tokens if faults.chunk_tokens > 1
                    else interval if sent and interval > 1 else pending)
            if pending < size and not final:
                continue
            while pending >= size or (final and pending):
                n = min(size, pending)
                marks = [f.after for f in (faults.drop, None if malformed else faults.malformed,
                                           None if stalled else faults.stall) if f and f.after > sent]
                if marks:  # a fault fires exactly after its token: end the event there
                    n = min(n, min(marks) - sent)
                pending -= n
                last = final and not pending
                text = output_text(sent, n)
                await resp.write(event([text_choice(text, "length", chat)]) if last else token_event(text))
                sent += n
                if faults.drop and sent >= faults.drop.after:
                    log.info("fault drop: closing the connection after %d tokens", sent)
                    self.deployment.abort(rec)
                    if request.transport is not None:
                        request.transport.abort()
                    return resp
                if faults.malformed and not malformed and sent >= faults.malformed.after:
                    malformed = True
                    await resp.write(b'data: {"id": "' + ident.encode() + b'", "choices": [{"text": \n\n')
                if faults.stall and not stalled and sent >= faults.stall.after:
                    stalled = True
                    await asyncio.sleep(faults.stall.seconds)
            if final:
                break
        if include_usage and not faults.no_usage:
            await resp.write(event([], usage=self._usage(rec)))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


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
