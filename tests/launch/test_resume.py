"""Crash safety, end to end with real subprocesses, the simulated engine and real time:
`infermatrix sweep` killed with -9 mid-job, then `--resume`; a sweep stopped with SIGTERM; and
the pid notes that let a run stop what a killed runner left — never a neighbour's process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from launch_helpers import leftovers

from infermatrix.launch import pidfile

pytestmark = pytest.mark.slow

SWEEP_TIMEOUT_S = 900  # the smoke sweep takes ~1 min here; CI's 2 shared cores may be 3x slower
SGLANG = "deepseek-r1-0528.h200-sglang-fp8.smoke-1k-128.h200-dgx"  # the sweep's first job


def _sweep(root: Path, out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "infermatrix.cli", "sweep", "--output-dir", str(out),
            "--root", str(root), "--engine", "sim", *args]


def _start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "INFERMATRIX_ENGINE"}
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(pattern: str, run_dir: Path, proc: subprocess.Popen[str]) -> Path:
    """The first file matching ``pattern`` under the run folder (the sweep must still run)."""
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    while time.monotonic() < deadline:
        found = sorted(run_dir.glob(pattern))
        if found:
            return found[0]
        assert proc.poll() is None, f"the sweep ended early: {proc.communicate()}"
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"no {pattern} within {SWEEP_TIMEOUT_S} s")


def _signal_mid_job(root: Path, out: Path, run_id: str, sig: int) -> tuple[Path, int, str]:
    """Start the smoke sweep, send ``sig`` once its first job has written level c=1 (c=4 is
    under way), wait for it to end: (that level's file, exit code, stderr)."""
    proc = _start(_sweep(root, out, "--run-id", run_id), out.parent)
    try:
        first = _wait_for(f"jobs/{SGLANG}-*/conc-1.json", out / run_id, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=SWEEP_TIMEOUT_S)
    finally:
        proc.kill()
        proc.communicate()
    return first, proc.returncode, err


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _sim_servers(root: Path) -> list[str]:
    return [line for line in leftovers(str(root)) if "infermatrix.sim" in line]


def _collect(run_dir: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "infermatrix.cli", "collect", str(run_dir)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out.stdout


def test_kill_9_mid_sweep_then_resume(catalog_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    run_dir = out / "r1"
    first, code, _ = _signal_mid_job(catalog_copy, out, "r1", signal.SIGKILL)
    assert code == -signal.SIGKILL
    job_dir = first.parent
    finished = {p: p.read_bytes() for p in sorted(run_dir.glob("jobs/*/conc-*.json"))}
    assert first in finished

    # what a kill -9 leaves: the job "running", every planned job in run.json; collect says the
    # job was cut short and the rest never ran. The server (its own session) does not outlive
    # the runner: it watches it and ends itself (tests/security/test_sim_watchdog.py)
    deadline = time.monotonic() + 120
    while _sim_servers(catalog_copy) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _sim_servers(catalog_copy) == [], "the killed sweep's server outlived it"
    assert _json(job_dir / "manifest.json")["state"] == "running"
    planned = _json(run_dir / "run.json")["jobs"]
    assert len(planned) == 4 and [j["state"] for j in planned] == ["running"] + ["pending"] * 3
    collected = _collect(run_dir)
    assert "1 interrupted jobs, 3 missing jobs" in collected, collected

    # the same run id again, without --resume, is refused: nothing measured is overwritten
    again = subprocess.run(_sweep(catalog_copy, out, "--run-id", "r1"), capture_output=True,
                           text=True, timeout=SWEEP_TIMEOUT_S, check=False, cwd=tmp_path)
    assert again.returncode == 2 and "--resume r1" in again.stderr
    assert "Traceback" not in again.stderr

    resumed = subprocess.run(_sweep(catalog_copy, out, "--resume", "r1"), capture_output=True,
                             text=True, timeout=SWEEP_TIMEOUT_S, check=False, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    # finished levels are byte-identical; the interrupted job measured only what it lacked
    for path, data in finished.items():
        assert path.read_bytes() == data, f"{path} was rewritten"
    manifest = _json(job_dir / "manifest.json")
    assert manifest["state"] == "done" and manifest["status"] == "ok" and manifest["attempt"] == 2
    assert sorted(lv["concurrency"] for lv in manifest["levels"]) == [1, 4, 16]
    assert all((job_dir / lv["file"]).is_file() for lv in manifest["levels"])
    (earlier,) = manifest["previous_attempts"]
    assert earlier["state"] == "interrupted" and earlier["finished_at"] is None
    run = _json(run_dir / "run.json")
    assert run["state"] == "done" and run["resumes"] == 1
    assert {j["state"] for j in run["jobs"]} == {"done"}
    assert len(list(run_dir.glob("jobs/*/conc-*.json"))) == 6
    assert "interrupted" not in _collect(run_dir)
    assert list(run_dir.glob("jobs/*/*.pid")) == []  # every server stopped and its note removed
    assert _sim_servers(catalog_copy) == []


def test_sigterm_ends_a_sweep_cleanly(catalog_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    run_dir = out / "t1"
    first, code, err = _signal_mid_job(catalog_copy, out, "t1", signal.SIGTERM)
    assert code == 130, err[-3000:]
    assert "Traceback" not in err and "interrupted (SIGTERM)" in err
    assert "--resume t1" in err
    run = _json(run_dir / "run.json")
    assert run["state"] == "interrupted" and run["finished_at"]
    assert [j["state"] for j in run["jobs"]] == ["interrupted"] + ["pending"] * 3
    manifest = _json(first.parent / "manifest.json")
    assert manifest["state"] == "interrupted" and manifest["error"] == "interrupted: SIGTERM"
    assert {lv["concurrency"]: lv["status"] for lv in manifest["levels"]}[1] == "ok"
    assert list(run_dir.glob("jobs/*/*.pid")) == []
    assert _sim_servers(catalog_copy) == []


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                            start_new_session=True)


def _note(path: Path, proc: subprocess.Popen[bytes], owner: dict[str, Any], **change: Any) -> None:
    pidfile.record(path, proc.pid, list(map(str, proc.args)))  # type: ignore[arg-type]
    note = {**_json(path), "owner": owner, **change}
    path.write_text(json.dumps(note))


def test_reap_stops_only_what_a_dead_runner_started(tmp_path: Path) -> None:
    job = tmp_path / "run" / "jobs" / "j"
    job.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = {**pidfile.me(), "pid": dead.pid, "start": 1}  # a runner that no longer exists
    ours, neighbour, reused = _sleeper(), _sleeper(), _sleeper()
    try:
        _note(job / "server-ours.pid", ours, gone)
        _note(job / "server-live.pid", neighbour, pidfile.me())  # a live runner's server
        _note(job / "server-reused.pid", reused, gone, start=1)  # the pid is someone else's now
        stopped = pidfile.reap(tmp_path, lambda m: None, grace_s=30)
        assert stopped == [ours.pid]
        assert ours.wait(timeout=30) == -signal.SIGTERM
        assert neighbour.poll() is None and reused.poll() is None
        assert sorted(p.name for p in job.iterdir()) == ["server-live.pid"]
    finally:
        for proc in (ours, neighbour, reused):
            proc.kill()
            proc.wait()
