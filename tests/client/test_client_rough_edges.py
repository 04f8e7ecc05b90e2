"""The first hour with `bench` (issue 31): an OpenAI-style base URL ending in /v1, token lengths
bounded before any prompt is built, world-readable result files, bare hub ids such as gpt2,
and a quick, clear failure when the hub cannot be reached."""

from __future__ import annotations

import json
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infermatrix.client.cli import main
from infermatrix.client.errors import ClientInputError
from infermatrix.client.tokenizer import HFTokenizer, load_tokenizer

SMALL = ["--num-prompts", "3", "--random-input-len", "4", "--random-output-len", "2",
         "--tokenizer", "words", "--disable-tqdm"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_base_url_ending_in_v1(serve, tmp_path: Path, capsys) -> None:
    """http://HOST:PORT/v1 is how OpenAI clients name a server: no /v1/v1/models."""
    srv = serve()
    code = main(["--base-url", f"{srv.base_url}/v1/", *SMALL, "--save-result",
                 "--result-dir", str(tmp_path), "--result-filename", "r.json"])
    assert code == 0, capsys.readouterr().err
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["completed"] == 3
    assert result["endpoint"] == f"{srv.base_url}/v1/completions"


def test_result_files_are_world_readable(serve, tmp_path: Path) -> None:
    srv = serve()
    assert main(["--base-url", srv.base_url, *SMALL, "--save-result", "--result-dir",
                 str(tmp_path), "--result-filename", "r.json"]) == 0
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o644


@pytest.mark.parametrize("length", ["999999999", str(10**20)])
@pytest.mark.parametrize("flag", ["--random-input-len", "--random-output-len"])
def test_absurd_lengths_are_refused_at_once(flag: str, length: str) -> None:
    """Nothing listens on the port: the refusal must come before any prompt or connection."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "infermatrix.cli", "bench", "--base-url",
                           f"http://127.0.0.1:{free_port()}", flag, length],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"error: {flag}: at most 16,777,216 tokens (more than "
                                        f"any model's context), got {int(length):,}"]
    assert time.monotonic() - t0 < 60  # a loaded machine; the old behaviour never finished


@pytest.fixture
def hub_cache(tmp_path: Path, hf_tokenizer_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A hub cache holding a 'gpt2' snapshot (our trained tokenizer), as vLLM would leave it."""
    root = tmp_path / "hub"
    snap = root / "models--gpt2" / "snapshots" / "0123abc"
    snap.mkdir(parents=True)
    shutil.copy(hf_tokenizer_dir / "tokenizer.json", snap / "tokenizer.json")
    (root / "models--gpt2" / "refs").mkdir()
    (root / "models--gpt2" / "refs" / "main").write_text("0123abc")
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


def test_bare_hub_id_from_the_cache(hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # found locally: the network is never asked
    tok = load_tokenizer("gpt2")
    assert isinstance(tok, HFTokenizer) and tok.name == "gpt2"
    assert tok.count("katori mensol") > 0


def test_bare_hub_id_runs_a_benchmark(hub_cache: Path, serve, capsys,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    srv = serve()
    argv = [a for a in SMALL if a not in ("--tokenizer", "words")]
    assert main(["--base-url", srv.base_url, *argv, "--tokenizer", "gpt2"]) == 0, (
        capsys.readouterr().err)


def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def test_unreachable_hub_fails_fast_and_clearly(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _no_proxy(monkeypatch)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    port = free_port()  # nothing listens: a refused connection, like a machine with no network
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    t0 = time.monotonic()
    with pytest.raises(ClientInputError) as info:
        load_tokenizer("some-org/some-model")
    assert time.monotonic() - t0 < 10  # the library's retries took ~20 s
    assert str(info.value) == (
        f"cannot load tokenizer 'some-org/some-model': no such file or directory, not in the "
        f"hub cache ({tmp_path}), and the hub cannot be asked (cannot reach 127.0.0.1:{port}: "
        "Connection refused)")


def test_offline_mode_is_honoured_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_proxy(monkeypatch)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ClientInputError, match=r"the hub cannot be asked \(HF_HUB_OFFLINE is set\)"):
        load_tokenizer("gpt2")


@pytest.mark.parametrize("spec", ["no such dir", "a/b/c", "bad--name", "../up"])
def test_neither_path_nor_hub_id(spec: str) -> None:
    with pytest.raises(ClientInputError, match="not a hub id"):
        load_tokenizer(spec)


def test_the_client_takes_every_length_the_catalog_allows() -> None:
    """A workload that validates must not be refused by the client it runs through."""
    from infermatrix.catalog.schema import MAX_TOKENS as CATALOG_MAX
    from infermatrix.client.config import MAX_TOKENS, BenchConfig

    assert MAX_TOKENS >= CATALOG_MAX
    assert BenchConfig(random_input_len=CATALOG_MAX).random_input_len == CATALOG_MAX
