"""Drive a headless Chromium over the DevTools protocol (aiohttp websocket, no extra package).

Used by the dashboard's browser test and by scripts/bench_results.py to check that the page
loads without console errors, count what it draws, and time its interactions.

    async with open_page() as page:
        await page.goto(path.as_uri())
        n = await page.eval("document.getElementById('chart').dataset.points")
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio")


class BrowserError(RuntimeError):
    pass


def find_chromium() -> str | None:
    explicit = os.environ.get("INFERMATRIX_CHROMIUM")
    if explicit:  # a chosen binary that is not there means "no chromium", not another one
        return shutil.which(explicit)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Page:
    """One page target: commands, events, console errors."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.errors: list[str] = []
        self.console: list[str] = []
        self.loaded = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            if "id" in data:
                fut = self.pending.pop(data["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(data)
                continue
            self._event(data.get("method", ""), data.get("params", {}))

    def _event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.console.append(f"{params.get('type')}: {text}")
            if params.get("type") in ("error", "assert"):
                self.errors.append(f"console.{params.get('type')}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            exc = details.get("exception", {}).get("description") or details.get("text")
            self.errors.append(f"exception: {exc} (line {details.get('lineNumber')})")
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            if entry.get("level") == "error":
                self.errors.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
        elif method == "Page.loadEventFired":
            self.loaded.set()

    async def send(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        n = next(self.ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[n] = fut
        await self.ws.send_str(json.dumps({"id": n, "method": method, "params": params}))
        reply = await asyncio.wait_for(fut, timeout)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    async def goto(self, url: str, timeout: float = 30.0) -> None:
        self.loaded.clear()
        await self.send("Page.navigate", url=url)
        await asyncio.wait_for(self.loaded.wait(), timeout)

    async def eval(self, expression: str, timeout: float = 30.0) -> Any:
        result = await self.send("Runtime.evaluate", timeout=timeout, expression=expression,
                                 returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            desc = result["exceptionDetails"].get("exception", {}).get("description")
            raise BrowserError(f"evaluate {expression[:60]!r}: {desc or result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    async def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = await self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression!r}")
            await asyncio.sleep(0.05)

    async def screenshot(self, path: Path) -> Path:
        shot = await self.send("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


async def _devtools_port(profile: Path, proc: subprocess.Popen[bytes], timeout: float) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrowserError(f"chromium exited with code {proc.returncode} before it was ready")
        if marker.exists():
            lines = marker.read_text().split()
            if lines and lines[0].isdigit():
                return int(lines[0])
        await asyncio.sleep(0.05)
    raise BrowserError("chromium did not open its DevTools port in time")


@contextlib.asynccontextmanager
async def open_page(chromium: str | None = None, width: int = 1280, height: int = 900,
                    timeout: float = 30.0) -> AsyncIterator[Page]:
    binary = chromium or find_chromium()
    if binary is None:
        raise BrowserError("no chromium found (apt-get install -y chromium)")
    # ignore_cleanup_errors: the profile is scratch; a straggler's last write must not fail a run
    with tempfile.TemporaryDirectory(prefix="imx-chromium-", ignore_cleanup_errors=True) as tmp:
        profile = Path(tmp)
        proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            port = await _devtools_port(profile, proc, timeout)
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                    targets = await resp.json()
                page_ws = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
                async with http.ws_connect(page_ws, max_msg_size=0) as ws:
                    page = Page(ws)
                    for domain in ("Page", "Runtime", "Log"):
                        await page.send(f"{domain}.enable")
                    try:
                        yield page
                    finally:
                        page.reader.cancel()
        finally:
            _stop_group(proc)


def _stop_group(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Stop Chromium and every helper process it started (renderer, GPU, zygote: its process
    group), and wait until they are gone, so none still writes into the profile being removed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # helpers that outlived the browser process
    deadline = time.monotonic() + timeout
    while _group_running(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)


def _group_running(pgid: int) -> bool:
    """Whether a live (not zombie) process of group ``pgid`` is left."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():  # not Linux: ask the kernel (zombies count as alive there)
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] != "Z" and int(fields[2]) == pgid:  # state, ppid, pgrp
            return True
    return False
