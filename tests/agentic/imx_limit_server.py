"""A tiny OpenAI-compatible chat server whose capacity is known by construction.

A request admitted while more than ``--limit`` requests are in flight (itself included) streams
its tokens ``--slow-gap-ms`` apart; otherwise ``--fast-gap-ms`` apart. TTFT stays small. So an
SLO tier whose speed sits between the two passes exactly up to ``limit`` closed-loop agents
with no tool delay. A request leaves the in-flight count after its last token and before the
usage event and [DONE], so an agent's next turn never overlaps its own previous one.
With ``--first-gap-ms`` the first request the server receives streams that far apart instead
(one long first answer).

Between two turns an agent is briefly out of the count (the client receives, parses and sends
the next turn), so one agent above the limit only slows the requests admitted while all the
others are in flight. The longer a fast request is against that turn-around, the more of them
that is: tests give requests enough tokens that a loaded machine's slower turn-around still
leaves most requests slow one agent above the limit.

    python tests/agentic/imx_limit_server.py --port 8123 --limit 11
"""

from __future__ import annotations

import argparse
import asyncio
import json

from aiohttp import web

MODEL = "limit-model"


def make_app(limit: int, fast_gap_s: float, slow_gap_s: float,
             first_gap_s: float | None = None) -> web.Application:
    state: dict[str, object] = {"active": 0, "last": {}, "served": 0}

    async def models(_req: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def chat(req: web.Request) -> web.StreamResponse:
        body = await req.json()
        # what the last request carried that a router reads for affinity (tests check it)
        state["last"] = {
            "x_session_id": req.headers.get("X-Session-ID"),
            "x_dynamo_session_id": req.headers.get("X-Dynamo-Session-ID"),
            "disaggregated_params": body.get("disaggregated_params"),
            "ignore_eos": body.get("ignore_eos"),
            "max_tokens": body.get("max_tokens"),
            "roles": [m.get("role") for m in body.get("messages", [])],
        }
        n = int(body.get("max_tokens") or 16)
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        state["active"] += 1  # type: ignore[operator]
        gap = slow_gap_s if state["active"] > limit else fast_gap_s  # type: ignore[operator]
        if first_gap_s is not None and state["served"] == 0:
            gap = first_gap_s
        state["served"] += 1  # type: ignore[operator]
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        try:
            await resp.prepare(req)
            for _ in range(n):
                await asyncio.sleep(gap)
                chunk = {"id": "x", "choices": [{"index": 0, "delta": {"content": " w"}}]}
                await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        finally:
            state["active"] -= 1  # type: ignore[operator]
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": n,
            "total_tokens": prompt + n,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        await resp.write(
            b"data: "
            + json.dumps({"id": "x", "choices": [], "usage": usage}).encode()
            + b"\n\ndata: [DONE]\n\n"
        )
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", models)

    async def last(_req: web.Request) -> web.Response:
        return web.json_response(state["last"])

    app.router.add_get("/debug/last", last)
    app.router.add_post("/v1/chat/completions", chat)
    return app


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--limit", type=int, required=True)
    p.add_argument("--fast-gap-ms", type=float, default=2.0)
    p.add_argument("--slow-gap-ms", type=float, default=25.0)
    p.add_argument("--first-gap-ms", type=float, default=None)
    a = p.parse_args()
    first = None if a.first_gap_ms is None else a.first_gap_ms / 1000
    web.run_app(
        make_app(a.limit, a.fast_gap_ms / 1000, a.slow_gap_ms / 1000, first),
        host="127.0.0.1",
        port=a.port,
        print=None,
        access_log=None,
    )


if __name__ == "__main__":
    main()
