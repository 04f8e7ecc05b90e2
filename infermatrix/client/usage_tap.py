"""Reads a streamed answer's cached-token count (usage.prompt_tokens_details) without
parsing on the hot path."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from .http import HTTPClient, SinkFactory
from .sse import SSEParser


class UsageTap:
    """Stands in for the HTTP client in ``send`` for one request and keeps references to the
    last few body pieces, so the final usage event's ``prompt_tokens_details.cached_tokens`` can
    be read after the response (the shared record does not carry it). No copy, no parsing on
    the hot path."""

    __slots__ = ("_client", "_tail")

    def __init__(self, client: HTTPClient) -> None:
        self._client = client
        self._tail: deque[bytes] = deque(maxlen=4)

    async def request(
        self,
        method: str,
        url: str,
        body: bytes | None,
        sink_factory: SinkFactory,
        headers: dict[str, str] | None = None,
    ) -> Any:
        tail = self._tail

        def factory(resp: Any) -> Any:
            inner = sink_factory(resp)

            def sink(data: bytes, t: float) -> None:
                tail.append(data)
                inner(data, t)

            return sink

        return await self._client.request(method, url, body, factory, headers)

    def cached_tokens(self) -> int | None:
        parser = SSEParser()
        for event in reversed(parser.feed(b"".join(self._tail)) + parser.flush()):
            try:
                obj = json.loads(event)
            except (ValueError, RecursionError):
                continue
            usage = obj.get("usage") if isinstance(obj, dict) else None
            if isinstance(usage, dict):
                details = usage.get("prompt_tokens_details")
                cached = details.get("cached_tokens") if isinstance(details, dict) else None
                return cached if isinstance(cached, int) and not isinstance(cached, bool) else None
        return None
