"""Helpers of the robustness tests: a CLI call bounded in time (in-process, SIGALRM) or in
time and memory (a subprocess under RLIMIT_AS), a small scratch catalog, and the shape every
problem line must have. (A module, not conftest: see tests/launch/launch_helpers.py.)"""

from __future__ import annotations

import contextlib
import io
import re
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infermatrix.cli import main

REPO = Path(__file__).resolve().parents[2]
# `path:line: message` or `path: message` (a problem with no line, e.g. an unreadable file)
PROBLEM = re.compile(r"^[^\s:][^:\n]*(:\d+)?: \S")
MEMORY_LIMIT = 2 << 30  # bytes of address space for a bounded subprocess


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expired(_sig: int, _frame: object) -> None:
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def call(argv: list[str], seconds: int = 60) -> tuple[int, str, str]:
    """``infermatrix ARGV`` in-process: (exit code, stdout, stderr); any exception escapes."""
    out, err = io.StringIO(), io.StringIO()
    with time_limit(seconds), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_bounded(argv: list[str], cwd: Path, seconds: float = 120) -> subprocess.CompletedProcess[str]:
    """``infermatrix ARGV`` in a subprocess with a time-out and an address-space limit."""
    return subprocess.run([sys.executable, "-m", "infermatrix.cli", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=seconds,
                          preexec_fn=_limit_memory, check=False)


def assert_problem_lines(err: str) -> list[str]:
    """No traceback, at least one line, each `file:line: message`."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert lines, "no message"
    for line in lines:
        assert PROBLEM.match(line), f"not a `file:line: message` line: {line!r}"
    return lines


MINI_FILES = ("matrix/hardware.yaml", "matrix/models.yaml", "matrix/workloads.yaml",
              "runners/fleets.yaml", "benchmarks/llama-3.1-70b-instruct/h200-vllm-fp8.yaml",
              "benchmarks/deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8.yaml")


def mini_catalog(root: Path) -> Path:
    """A catalog of a few files (fast to load): hardware, models, workloads, fleets, 2 recipes."""
    for name in MINI_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    return root


def value_paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path (keys and indices) of every value in a JSON/YAML-shaped value, the root's too."""
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += value_paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += value_paths(v, (*prefix, i))
    return out
