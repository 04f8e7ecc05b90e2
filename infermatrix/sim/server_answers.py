"""Answering a generation while the engine runs it: the whole answer as one JSON body, an OpenAI
server-sent-event stream (one event per engine step, the stream faults injected at their
token), or SGLang's /generate events (the text so far at each step).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from aiohttp import web

from .config import SimConfig
from .engine import Deployment, RequestRecord
from .faults import RequestFaults
from .tokens import output_text

log = logging.getLogger(__name__)


def text_choice(text: str, finish: str | None, chat: bool) -> dict[str, Any]:
    if chat:
        return {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": finish}
    return {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}


def usage(rec: RequestRecord) -> dict[str, Any]:
    return {"prompt_tokens": rec.prompt_tokens, "completion_tokens": rec.completion_tokens,
            "total_tokens": rec.prompt_tokens + rec.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": rec.cached_tokens}}


async def whole_answer(rec: RequestRecord, queue: asyncio.Queue[int], ident: str, chat: bool,
                       model: str) -> web.Response:
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
        "created": int(time.time()), "model": model, "choices": [choice], "usage": usage(rec)})


async def native_answer(request: web.Request, rec: RequestRecord, queue: asyncio.Queue[int],
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


async def stream_answer(request: web.Request, rec: RequestRecord, queue: asyncio.Queue[int],
                        ident: str, chat: bool, include_usage: bool, faults: RequestFaults, *,
                        config: SimConfig, deployment: Deployment) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache"})
    await resp.prepare(request)
    created = int(time.time())
    obj = "chat.completion.chunk" if chat else "text_completion"
    model = config.served_model_name

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
    interval = config.stream_interval
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
                deployment.abort(rec)
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
        await resp.write(event([], usage=usage(rec)))
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp
