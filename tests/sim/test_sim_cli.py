"""`python -m infermatrix.sim serve` as the job runner starts it: a subprocess on a port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from infermatrix.sim.cli import main

RECIPE = "llama-3.1-70b-instruct/h200-vllm-fp8"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url: str, body: dict | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@contextmanager
def _serving(*args: str) -> Iterator[tuple[str, subprocess.Popen]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "infermatrix.sim", "serve", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                if _request(base + "/health")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "server never became healthy"
            time.sleep(0.1)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=10)


def test_serve_recipe_health_and_canary() -> None:
    with _serving("--recipe", RECIPE, "--served-model-name", "canary-model", "--time-scale", "10") as (base, _):
        status, body = _request(base + "/v1/completions",
                                {"model": "canary-model", "prompt": "Hello", "max_tokens": 4})
        assert status == 200
        assert len(json.loads(body)["choices"][0]["text"].split()) == 4


def test_crash_after_n_requests_kills_the_process() -> None:
    with _serving("--hardware", "H200", "--model", "llama-3.1-70b-instruct", "--precision", "fp8",
                  "--tp", "8", "--time-scale", "10", "--faults", "crash_after:n=2") as (base, proc):
        for _ in range(2):
            assert _request(base + "/v1/completions", {"prompt": "a", "max_tokens": 2})[0] == 200
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            _request(base + "/v1/completions", {"prompt": "a", "max_tokens": 2})
        assert proc.wait(timeout=10) == 3


@pytest.mark.parametrize("args, message", [
    (["--recipe", "no/such-recipe"], "unknown recipe"),
    (["--hardware", "H200", "--model", "llama-3.1-70b-instruct"], "--precision"),
    (["--hardware", "H9000", "--model", "llama-3.1-70b-instruct", "--precision", "fp8"], "unknown hardware"),
    (["--recipe", RECIPE, "--faults", "explode"], "unknown fault"),
    (["--recipe", RECIPE, "--tuning", "warp_factor=9"], "unknown tuning knob"),
    (["--hardware", "H100", "--model", "deepseek-r1-0528", "--precision", "fp8"], "no room for KV"),
    (["--hardware", "H200", "--model", "llama-3.1-70b-instruct", "--precision", "fp8",
      "--instances", "2", "--router-policy", "telepathy"], "unknown router policy"),
    (["--recipe", RECIPE, "--tp", "4"], "--tp"),
    (["--recipe", RECIPE, "--time-scale", "0"], "--time-scale"),
])
def test_bad_input_is_one_line_exit_2(args: list[str], message: str, capsys) -> None:
    assert main(["serve", *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_bad_input_from_the_command_line_has_no_traceback() -> None:
    proc = subprocess.run([sys.executable, "-m", "infermatrix.sim", "serve", "--recipe", "no/such"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "unknown recipe" in proc.stderr


def test_info_prints_the_numbers(capsys) -> None:
    assert main(["info", "--recipe", RECIPE]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["tp"] == 8 and info["gpus"] == 8 and info["kv_capacity_tokens"] > 1_000_000
