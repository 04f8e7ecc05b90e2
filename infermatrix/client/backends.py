"""Request bodies and stream-chunk decoding, per backend.

``vllm``, ``openai``, ``trtllm`` and ``sglang-oai`` speak ``/v1/completions``; ``openai-chat``,
``vllm-chat`` and ``sglang-oai-chat`` speak ``/v1/chat/completions``; ``sglang`` (and its alias
``sglang-native``) speaks SGLang's native ``/generate``, as SGLang's bench_serving does.
(trtllm-serve is OpenAI-compatible; we do not speak Triton's generate_stream.)"""

from __future__ import annotations

import json
from typing import Any

from .config import BenchConfig
from .records import RequestSpec

# the backend that speaks a catalog workload's endpoint: the one mapping (launch's levels and
# capacity searches, the capacity command, the benchmark commands the catalog page prints)
ENDPOINT_BACKENDS = {"completions": "vllm", "chat": "openai-chat"}


def backend_for(endpoint: str) -> str:
    """The client backend for a workload ``endpoint`` (completions | chat)."""
    return ENDPOINT_BACKENDS[endpoint]


def build_body(
    cfg: BenchConfig, model: str, spec: RequestSpec, max_tokens: int | None = None
) -> bytes:
    if cfg.is_native:
        return _native_body(cfg, spec, max_tokens)
    body: dict[str, Any] = {"model": model}
    if cfg.is_chat:
        body["messages"] = spec.messages or [{"role": "user", "content": spec.prompt}]
    else:
        body["prompt"] = spec.prompt
    body["max_tokens"] = max_tokens if max_tokens is not None else spec.output_len
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    if cfg.temperature is not None:
        body["temperature"] = cfg.temperature
    if cfg.ignore_eos:
        body["ignore_eos"] = True
    body.update(cfg.extra_body)
    return json.dumps(body, ensure_ascii=False).encode()


def _native_body(cfg: BenchConfig, spec: RequestSpec, max_tokens: int | None) -> bytes:
    """SGLang's /generate: the text, sampling_params, a stream of cumulative text."""
    sampling: dict[str, Any] = {
        "max_new_tokens": max_tokens if max_tokens is not None else spec.output_len,
        "ignore_eos": cfg.ignore_eos,
    }
    if cfg.temperature is not None:
        sampling["temperature"] = cfg.temperature
    body: dict[str, Any] = {"text": spec.prompt, "sampling_params": sampling, "stream": True}
    body.update(cfg.extra_body)
    return json.dumps(body, ensure_ascii=False).encode()


class Chunk:
    """What one decoded stream event says. ``text`` is '' when it carries no generated text."""

    __slots__ = ("error", "id", "prompt_tokens", "completion_tokens", "text")

    def __init__(self) -> None:
        self.text = ""
        self.completion_tokens: int | None = None
        self.prompt_tokens: int | None = None
        self.error: str | None = None
        self.id: str | None = None


def decode_chunk(obj: Any) -> Chunk:
    """Decode one parsed JSON event of a completions or chat-completions stream."""
    c = Chunk()
    if not isinstance(obj, dict):
        c.error = "event is not a JSON object"
        return c
    err = obj.get("error")
    if err is not None or obj.get("object") == "error":
        c.error = error_message(obj)
        return c
    c.id = _str_or_none(obj.get("id"))
    if "meta_info" in obj:
        return _native_chunk(obj, c)
    choices = obj.get("choices")
    if choices:
        choice = _first_choice(choices)
        if choice is None:  # any other JSON shape: an error event, never a crash
            c.error = f"unexpected 'choices' in the event: {json.dumps(choices)[:120]}"
            return c
        text = choice.get("text")
        if text is None:
            delta = choice.get("delta")
            if isinstance(delta, dict):  # reasoning models stream their thinking first
                text = _first_text(delta, ("content", "reasoning_content", "reasoning"))
        if isinstance(text, str):
            c.text = text
    return _counts(c, obj.get("usage"))


def _first_choice(choices: Any) -> dict[str, Any] | None:
    """The first choice when ``choices`` is a list whose first item is an object."""
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _first_text(obj: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The first of ``keys`` that holds a non-empty string ('' when none does). A plain loop:
    this runs once per streamed event."""
    for key in keys:
        v = obj.get(key)
        if isinstance(v, str) and v:
            return v
    return ""


def _str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _counts(c: Chunk, counts: Any) -> Chunk:
    """Token counts from a usage block or SGLang's meta_info (the same two names)."""
    if isinstance(counts, dict):
        c.completion_tokens = _int_or_none(counts.get("completion_tokens"))
        c.prompt_tokens = _int_or_none(counts.get("prompt_tokens"))
        c.id = c.id or _str_or_none(counts.get("id"))
    return c


def _native_chunk(obj: dict[str, Any], c: Chunk) -> Chunk:
    """An event of SGLang's /generate: ``text`` is everything so far (runner.uncumulate keeps
    the deltas); ``meta_info`` carries the token counts so far."""
    text = obj.get("text")
    if isinstance(text, str):
        c.text = text
    return _counts(c, obj.get("meta_info"))


def decode_full_response(obj: Any) -> Chunk:
    """A server that ignored ``stream: true`` and answered one JSON document."""
    c = decode_chunk(obj)
    choice = _first_choice(obj.get("choices")) if c.error is None and isinstance(obj, dict) else None
    if choice is not None:
        msg = choice.get("message")
        if isinstance(msg, dict) and not c.text:
            c.text = _first_text(msg, ("content", "reasoning_content"))
    return c


def error_message(obj: Any) -> str:
    """Best one-line message from an OpenAI/vLLM/FastAPI-style error body."""
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
        for key in ("message", "detail"):
            if obj.get(key):
                return str(obj[key])
    return json.dumps(obj)[:300]


# A token count no request can have: a server reporting more is not believed (the output is
# re-tokenized instead), so sums and rates stay finite and the level's result is written.
MAX_USAGE_TOKENS = 2**40


def _int_or_none(v: Any) -> int | None:
    ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_USAGE_TOKENS
    return v if ok else None
