"""`infermatrix capacity` end to end against a running server, and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infermatrix.commands.capacity import main
from infermatrix.results import agentic
from infermatrix.results.store import Store


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "capacity", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--gpus", "2"], "give --base-url"),
        (["--base-url", "http://127.0.0.1:9", "--tier", "bad"], "NAME=SPEED:TTFT"),
        (["--recipe", "no/such"], "unknown recipe"),
        (["--base-url", "http://127.0.0.1:9", "--gpus", "1", "--tier", "X=-5:1"], "greater than 0"),
        (["--base-url", "http://127.0.0.1:9", "--gpus", "1", "--duration", "0"], "--duration"),
        (["--base-url", "http://127.0.0.1:9", "--gpus", "1"], "cannot reach server"),
        (
            ["--base-url", "http://127.0.0.1:9", "--gpus", "1", "--synthetic", "turns=zipf:a=2"],
            "high",
        ),
    ],
)
def test_usage_errors_are_one_line(
    args: list[str], msg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1, err


def test_cli_against_a_server(limit_server, tmp_path: Path) -> None:
    srv = limit_server(3)
    out, store = tmp_path / "cap.json", tmp_path / "h.sqlite"
    r = cli(
        "--base-url",
        srv.base_url,
        "--gpus",
        "2",
        "--usd-per-gpu-hour",
        "3",
        "--tier",
        "T=80:1",
        "--synthetic",
        "turns=4",
        "--synthetic",
        "system_prompt_tokens=10",
        "--synthetic",
        "user_tokens=5",
        "--synthetic",
        "output_tokens=8",
        "--synthetic",
        "tool_delay_s=0",
        "--duration",
        "0.5",
        "--warmup",
        "0.1",
        "--max-concurrency",
        "8",
        "-o",
        str(out),
        "--store",
        str(store),
        "--quiet",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "infermatrix-agentic-capacity"
    assert 2 <= doc["tiers"][0]["passing_concurrency"] <= 3
    assert "T: " in r.stderr and "/GPU over 2 GPUs" in r.stderr
    with Store(store) as s:
        assert [rec.tier for rec in agentic.load(s)] == ["T"]
