"""Reading a generation request: the body as JSON, its OpenAI completions / chat fields (or
SGLang's /generate) as an engine request, the session it belongs to and the faults it carries;
a request that cannot be served raises ApiError, answered by ``error_response``.
"""

from __future__ import annotations

import json
import random
from typing import Any

from aiohttp import web

from .config import SimConfig
from .engine import EngineRequest
from .faults import HEADER, FaultError, RequestFaults, parse_faults
from .faults import Fault as FaultSpec
from .prefix_cache import chain_hashes
from .tokens import PromptTokenizer, chat_text

DEFAULT_COMPLETION_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
DEFAULT_CHAT_MAX_TOKENS = 1024  # no EOS in a simulation: a chat without max_tokens stops here


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str = "BadRequestError"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def error_response(status: int, message: str, kind: str = "BadRequestError") -> web.Response:
    return web.json_response(
        {"object": "error", "error": {"message": message, "type": kind, "code": status},
         "message": message, "type": kind, "code": status}, status=status)


async def read_json(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def request_faults(request: web.Request, base: list[FaultSpec],
                   rng: random.Random) -> RequestFaults:
    """The server's faults and those of the request's fault header, resolved with one draw."""
    faults = list(base)
    header = request.headers.get(HEADER)
    if header:
        try:
            faults += parse_faults(header)
        except FaultError as exc:
            raise ApiError(400, f"{HEADER}: {exc}") from None
    return RequestFaults.resolve(faults, rng.random())


def parse_request(body: dict[str, Any], chat: bool, config: SimConfig, tokenizer: PromptTokenizer,
                  native: bool = False) -> tuple[EngineRequest, bool, bool]:
    """The engine request (no session yet), whether to stream, whether to add usage."""
    if native:  # SGLang's /generate as the completions body it stands for
        sampling = body.get("sampling_params") or {}
        if not isinstance(sampling, dict):
            raise ApiError(400, "sampling_params must be an object")
        body = {"prompt": body.get("text"), "max_tokens": sampling.get("max_new_tokens"),
                "stream": body.get("stream", False)}
    model = body.get("model")
    if model is not None and model != config.served_model_name:
        raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError")
    if body.get("n", 1) != 1:
        raise ApiError(400, "only n=1 is supported")
    if chat:
        try:
            text = chat_text(body.get("messages"))
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        tokens = tokenizer.tokens(text)
    else:
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
            prompt = prompt[0]
        if isinstance(prompt, str):
            tokens = tokenizer.tokens(prompt)
        elif isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
            tokens = prompt  # token ids
        else:
            raise ApiError(400, "'prompt' must be a string or a list of token ids")
    max_tokens = body.get("max_completion_tokens") if chat else None
    if max_tokens is None:
        max_tokens = body.get("max_tokens")
    room = config.max_model_len - len(tokens)
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
    hashes = chain_hashes(tokens, config.block_size) if config.prefix_caching or \
        (config.prefill and config.prefill.prefix_caching) else ()
    return EngineRequest(len(tokens), max_tokens, hashes, None), stream, include_usage


def session_id(request: web.Request, body: dict[str, Any]) -> str | None:
    """The session a request belongs to (the router's affinity key): a session header,
    Dynamo's conversation id, or the OpenAI ``user``."""
    for h in ("X-Session-ID", "X-Dynamo-Session-ID", "X-Conversation-ID"):
        if request.headers.get(h):
            return request.headers[h]
    params = body.get("disaggregated_params")
    if isinstance(params, dict) and params.get("conversation_id") is not None:
        return str(params["conversation_id"])
    user = body.get("user")
    return str(user) if user else None
