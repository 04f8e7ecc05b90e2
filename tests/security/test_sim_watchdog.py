"""A runner killed with `kill -9` leaves no simulated server running: the server watches the
runner that started it (`--parent-pid`) and ends itself once it is gone, without waiting for
the next run or resume into the same folder to reap it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DEADLINE_S = 120.0  # generous on a loaded machine; the watchdog polls every 0.5 s


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait(condition, timeout: float) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_sim_server_ends_with_its_killed_runner(tmp_path: Path) -> None:
    out = tmp_path / "results"
    runner = subprocess.Popen(
        [sys.executable, "-m", "infermatrix.cli", "run", "--recipe", "llama-3.1-70b-instruct/h200-vllm-fp8",
         "--workload", "smoke-1k-128", "--concurrency", "1", "--engine", "sim", "--run-id", "k9",
         "--output-dir", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    sim_pid = None
    try:
        notes = out / "k9" / "jobs"

        def started() -> bool:
            nonlocal sim_pid
            for note in notes.glob("*/server-sim.pid"):
                try:
                    sim_pid = int(json.loads(note.read_text())["pid"])
                except (OSError, ValueError, KeyError):
                    return False
                return _alive(sim_pid)
            return False

        assert _wait(started, DEADLINE_S), "the runner never started its simulated server"
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(timeout=30)
        assert sim_pid is not None
        assert _wait(lambda: not _alive(sim_pid), DEADLINE_S), \
            f"simulated server {sim_pid} still running {DEADLINE_S:.0f} s after its runner was killed"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(timeout=30)
        if sim_pid is not None and _alive(sim_pid):  # what main leaves: clean up after the test
            os.killpg(sim_pid, signal.SIGKILL)
