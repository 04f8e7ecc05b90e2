"""Every file the tool reads is a regular file read with a size bound, JSON depth is bounded and
every numeric flag is finite and bounded: a FIFO, /dev/zero, 100k nested brackets or a number
like 10**30 / nan / inf is one clear line and exit 2, never a hang, a RecursionError or a
MemoryError. Each command runs in a subprocess with a deadline, so a hang fails the test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000
DEADLINE_S = 120  # generous on a loaded machine; a hang never ends


def _cli(*args: str, cwd: Path) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-m", "infermatrix.cli", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=DEADLINE_S, check=False,
                         stdin=subprocess.DEVNULL)
    assert "Traceback" not in out.stderr, out.stderr
    return out.returncode, out.stderr


def _last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


def test_fifo_named_yaml_does_not_hang_validate(tmp_path: Path) -> None:
    for part in ("matrix", "runners"):
        shutil.copytree(REPO / part, tmp_path / part)
    shutil.rmtree(tmp_path / "matrix" / "sweeps")  # they name recipes this scratch catalog lacks
    (tmp_path / "benchmarks" / "x").mkdir(parents=True)
    os.mkfifo(tmp_path / "benchmarks" / "x" / "evil.yaml")
    rc, err = _cli("validate", "--root", str(tmp_path), cwd=tmp_path)
    assert rc == 2 and err.strip() == "benchmarks/x/evil.yaml: cannot read file: not a regular file", err


@pytest.mark.parametrize("kind", ["fifo", "deep", "dev-zero"])
def test_job_file_is_bounded(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "job.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "deep":
        path.write_text(DEEP)
    rc, err = _cli("run", "/dev/zero" if kind == "dev-zero" else str(path), "--virtual",
                   "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert rc == 2 and "cannot read a job" in err and len(err.strip().splitlines()) == 1, err
    assert ("nested too deeply" if kind == "deep" else "not a regular file") in err


@pytest.mark.parametrize("history", ["/dev/zero", "fifo", "deep"])
def test_plan_history_is_bounded(tmp_path: Path, history: str) -> None:
    if history == "fifo":
        os.mkfifo(tmp_path / "h.jsonl")
        history = str(tmp_path / "h.jsonl")
    elif history == "deep":
        (tmp_path / "h.jsonl").write_text(DEEP + "\n")
        history = str(tmp_path / "h.jsonl")
    rc, err = _cli("plan", "smoke", "--incremental", "--history", history, cwd=REPO)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and history in err, err


@pytest.mark.parametrize(("args", "flag"), [
    (("plan", "smoke", "--max-shards", str(10**30)), "--max-shards"),
    (("plan", "smoke", "--max-shards", "-1"), "--max-shards"),
    (("plan", "smoke", "--incremental", "--max-age-days", "nan"), "--max-age-days"),
    (("run", "--recipe", "tiny/cpu-vllm-bf16", "--workload", "smoke-1k-128", "--virtual",
      "--ready-timeout", "nan"), "--ready-timeout"),
    (("run", "--recipe", "tiny/cpu-vllm-bf16", "--workload", "smoke-1k-128", "--virtual",
      "--ready-timeout", "inf"), "--ready-timeout"),
    (("sweep", "smoke", "--virtual", "--workers", "1e9"), "--workers"),
    (("sim", "serve", "--recipe", "tiny/cpu-vllm-bf16", "--time-scale", "inf"), "--time-scale"),
    (("sim", "serve", "--recipe", "tiny/cpu-vllm-bf16", "--time-scale", "nan"), "--time-scale"),
    (("sim", "serve", "--recipe", "tiny/cpu-vllm-bf16", "--port", "99999999"), "--port"),
    (("sim", "info", "--recipe", "tiny/cpu-vllm-bf16", "--tp", str(10**30)), "--tp"),
    (("report", "x", "-o", "y", "--last", str(10**30)), "--last"),
])
def test_numeric_flags_are_finite_and_bounded(tmp_path: Path, args: tuple[str, ...], flag: str) -> None:
    rc, err = _cli(*args, cwd=tmp_path)
    assert rc == 2 and flag in _last_line(err), err


@pytest.mark.parametrize(("dataset", "kind"), [("sharegpt", "fifo"), ("sharegpt", "deep"),
                                               ("trace", "fifo"), ("trace", "deep"),
                                               ("sharegpt", "/dev/zero")])
def test_bench_dataset_file_is_bounded(tmp_path: Path, dataset: str, kind: str) -> None:
    """`bench`'s dataset files too: refused before any request (no server is needed)."""
    path = tmp_path / "data.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "deep":
        path.write_text(DEEP + "\n")
    rc, err = _cli("bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", "words",
                   "--dataset-name", dataset, "--dataset-path", kind if kind == "/dev/zero" else str(path),
                   "--num-prompts", "2", cwd=tmp_path)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "not a regular file" in err or "nested too deeply" in err, err


@pytest.mark.parametrize("flag", [("--duration", "nan"), ("--warmup", "inf"), ("--time-scale", "inf"),
                                  ("--resolution-pct", "nan"), ("--max-concurrency", str(10**30)),
                                  ("--tool-delay", "nan"), ("--usd-per-gpu-hour", "inf")])
def test_capacity_numbers_are_finite_and_bounded(tmp_path: Path, flag: tuple[str, str]) -> None:
    rc, err = _cli("capacity", "--base-url", "http://127.0.0.1:9", "--gpus", "1", *flag, cwd=tmp_path)
    assert rc == 2 and flag[0] in _last_line(err), err
