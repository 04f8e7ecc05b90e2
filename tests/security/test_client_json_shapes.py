"""The client survives any JSON shape a server sends, in the pre-flight request and mid-run:
a hostile event is one failed request (an error event), never a traceback, and the level's
result is still written. A real aiohttp server on loopback answers with each shape."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from infermatrix.cli import main

GOOD = {"id": "c1", "choices": [{"index": 0, "text": "tok "}]}
DEEP = "[" * 100_000 + "]" * 100_000
SHAPES: list[Any] = [
    {"choices": "abc"},
    {"choices": ["a", "b"]},
    {"choices": [1, 2]},
    {"choices": [None]},
    {"choices": 123},
    {"choices": {"text": "x"}},
    {"choices": [{"delta": "x"}]},
    {"choices": [{"delta": {"content": ["x"]}}], "id": [1]},
    {"choices": [{"text": "tok "}], "usage": "many", "id": {"a": 1}},
    {"error": [1, 2]},
    ["a", "list"],
    "a string",
    12,
    None,
    DEEP,
]


class ShapeServer:
    """/v1/models lists one model; /v1/completions streams ``first`` for the first request
    (the client's pre-flight) and ``later`` for every other, each after one good event."""

    def __init__(self, first: Any, later: Any) -> None:
        self.first, self.later, self.n = first, later, 0
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _event(self, obj: Any) -> bytes:
        text = obj if isinstance(obj, str) and obj.startswith("[[") else json.dumps(obj)
        return f"data: {text}\n\n".encode()

    async def completions(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.n += 1
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(self._event(GOOD))
        await resp.write(self._event(self.first if self.n == 1 else self.later))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "m"}]})

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/completions", self.completions)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.ready.set()
        self.loop.run_forever()

    def __enter__(self) -> ShapeServer:
        self.thread.start()
        assert self.ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


def _bench(port: int, out: Path) -> list[str]:
    return ["bench", "--backend", "vllm", "--base-url", f"http://127.0.0.1:{port}", "--model", "m",
            "--tokenizer", "words", "--dataset-name", "random", "--num-prompts", "4",
            "--random-input-len", "8", "--random-output-len", "4", "--max-concurrency", "2",
            "--save-result", "--result-dir", str(out.parent), "--result-filename", out.name,
            "--disable-tqdm"]


def _run(first: Any, later: Any, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with ShapeServer(first, later) as srv:
        rc = main(_bench(srv.port, out))
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return rc, err


@pytest.mark.parametrize("shape", SHAPES, ids=[f"shape{i}" for i in range(len(SHAPES))])
def test_mid_run_shape_is_an_error_event(shape: Any, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result.json"
    rc, err = _run(GOOD, shape, out, capsys)
    assert rc in (0, 1), err  # 1: the error-rate gate, after the result is written
    result = json.loads(out.read_text())
    assert result["completed"] + result["failed"] == 4


@pytest.mark.parametrize("shape", SHAPES[:10] + SHAPES[-1:],
                         ids=[f"shape{i}" for i in [*range(10), len(SHAPES) - 1]])
def test_pre_flight_shape_is_one_clear_line(shape: Any, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result.json"
    rc, err = _run(shape, GOOD, out, capsys)
    # a shape that still carries the good event's text passes the pre-flight; any other
    # fails it with one line naming the test request
    assert rc in (0, 2), err
    if rc == 2:
        assert "test request" in err and len(err.strip().splitlines()) == 1, err
    else:
        assert json.loads(out.read_text())["completed"] == 4
