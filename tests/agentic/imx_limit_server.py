"""A tiny OpenAI-compatible chat server whose capacity is known by construction.

A request admitted while more than ``--limit`` agents are active (its own included) streams its
tokens ``--slow-gap-ms`` apart; otherwise ``--fast-gap-ms`` apart. TTFT stays small. So an SLO
tier whose speed sits between the two passes exactly up to ``limit`` closed-loop agents with no
tool delay. A request stops being in flight after its last token and before the usage event and
[DONE], so an agent's next turn never overlaps its own previous one.
With ``--first-gap-ms`` the first request the server receives streams that far apart instead
(one long first answer).

It counts agents, not requests in flight. Counting requests made the limit soft: between two
turns an agent is briefly out of flight (the client receives, parses and sends the next turn),
so one agent above the limit slowed only the requests admitted while all the others were in
flight, and on a loaded machine, with a slower turn-around, too few of them for a tier to fail.
Here a conversation (its first two messages: the level's salt and system prompt, then its own
first user message, salted when a level reuses it) stays active between its turns, for up to
``--idle-s``; a conversation the server has not seen takes the place of the one that ended
longest ago (the same agent moving on to its next conversation), and counts as one more agent
only when none has ended. A new level (another salt) starts the count afresh.

    python tests/agentic/imx_limit_server.py --port 8123 --limit 11
"""

from __future__ import annotations

import argparse
import asyncio
import json

from aiohttp import web

MODEL = "limit-model"


class Agents:
    """The agents of the current level, by conversation: in flight, or idle since when."""

    def __init__(self, idle_s: float) -> None:
        self.idle_s = idle_s
        self.level: str | None = None
        self.idle_since: dict[str, float | None] = {}  # conversation -> None while in flight

    def admit(self, level: str, conversation: str, now: float) -> int:
        """Mark ``conversation`` in flight; return the number of agents active with it."""
        if level != self.level:
            self.level, self.idle_since = level, {}
        for key, since in list(self.idle_since.items()):
            if since is not None and now - since > self.idle_s:
                del self.idle_since[key]  # gone quiet for longer than a turn-around: left
        if conversation not in self.idle_since:
            idle = [(since, key) for key, since in self.idle_since.items() if since is not None]
            if idle:  # an agent that ended a conversation starts its next one
                del self.idle_since[min(idle)[1]]
        self.idle_since[conversation] = None
        return len(self.idle_since)

    def release(self, level: str, conversation: str, now: float) -> None:
        if level == self.level and conversation in self.idle_since:
            self.idle_since[conversation] = now


def conversation_of(messages: list[dict]) -> tuple[str, str]:
    """(level, conversation): every prompt starts with its level's salt (one word), and the
    first two messages tell one conversation from another."""
    texts = [str(m.get("content", "")) for m in messages[:2]]
    level = texts[0].split(" ", 1)[0] if texts else ""
    return level, "\x00".join(texts)


def make_app(limit: int, fast_gap_s: float, slow_gap_s: float,
             first_gap_s: float | None = None, idle_s: float = 1.0) -> web.Application:
    state: dict[str, object] = {"last": {}, "served": 0}
    agents = Agents(idle_s)

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
        level, conversation = conversation_of(body.get("messages", []))
        loop = asyncio.get_running_loop()
        active = agents.admit(level, conversation, loop.time())
        gap = slow_gap_s if active > limit else fast_gap_s
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
            agents.release(level, conversation, loop.time())
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
    p.add_argument("--idle-s", type=float, default=1.0)
    a = p.parse_args()
    first = None if a.first_gap_ms is None else a.first_gap_ms / 1000
    web.run_app(
        make_app(a.limit, a.fast_gap_ms / 1000, a.slow_gap_ms / 1000, first, a.idle_s),
        host="127.0.0.1",
        port=a.port,
        print=None,
        access_log=None,
    )


if __name__ == "__main__":
    main()
