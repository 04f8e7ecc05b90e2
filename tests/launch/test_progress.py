"""Progress with an ETA (issue 31): a CI log (no TTY) gets a line at a steady cadence, even
while nothing finishes; a terminal gets a tqdm bar. Checked on real commands: `sweep --virtual`
through a pipe and under a pseudo-terminal, `bench` through a pipe."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from infermatrix import progress as progress_mod
from infermatrix.client import progress as client_progress
from infermatrix.progress import Progress

LINE = re.compile(r"^sweep nightly: (\d+)/(\d+) levels \(\d+%\), [\d:]+ elapsed, ETA (\S+)")
SWEEP = [sys.executable, "-m", "infermatrix.cli", "sweep", "nightly", "--virtual",
         "--hardware", "h200", "--workload", "fixed-*", "--workers", "1"]


def test_default_cadence_is_under_ten_seconds() -> None:
    assert progress_mod.log_interval() <= 10 and client_progress.INTERVAL_S <= 10


def test_log_lines_keep_coming_while_nothing_finishes(monkeypatch: pytest.MonkeyPatch) -> None:
    """One unit that takes a while: the lines go on (elapsed grows), the ETA comes once a unit
    is done; no bar characters, no carriage returns; nothing at all for a quick command."""
    monkeypatch.setenv(progress_mod.INTERVAL_ENV, "0.3")
    out = io.StringIO()
    with Progress(2, "work", unit="step", stream=out) as p:
        time.sleep(1.2)
        p.advance()
        time.sleep(1.2)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and len(lines) >= 4, lines
    assert all(line.startswith("work: ") for line in lines)
    assert "0/2 steps" in lines[0] and "ETA ?" in lines[0]
    assert "1/2 steps (50%)" in lines[-1] and "ETA ?" not in lines[-1]
    quick = io.StringIO()
    with Progress(2, "work", stream=quick) as p:
        p.advance(2)
    assert quick.getvalue() == ""


def test_log_lines_never_land_inside_other_lines(monkeypatch: pytest.MonkeyPatch,
                                                capsys) -> None:
    """print() writes a line's text and its newline apart: a progress line written from the
    ticker thread in between would cut it. Under quiet_stderr both go out whole."""
    monkeypatch.setenv(progress_mod.INTERVAL_ENV, "0.1")
    with Progress(1000, "work", unit="step") as p, p.quiet_stderr():
        deadline = time.monotonic() + 1.5
        i = 0
        while time.monotonic() < deadline:
            print(f"job {i} " + "x" * 200, file=sys.stderr)
            p.advance()
            i += 1
    lines = capsys.readouterr().err.splitlines()
    assert any(ln.startswith("work: ") for ln in lines)
    bad = [ln for ln in lines if not re.fullmatch(r"job \d+ x{200}|work: .*ETA \S+", ln)]
    assert bad == []


def _timed_lines(proc: subprocess.Popen[str]) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        out.append((time.monotonic(), line.rstrip("\n")))
    return out


def test_sweep_in_a_ci_log(tmp_path: Path, repo_root: Path) -> None:
    """stderr a pipe, as in GitHub's log: progress lines at the configured cadence (0.5 s here,
    to keep the test short; the default is under 10 s), each after the first unit with an ETA."""
    interval = 0.5
    env = {**os.environ, progress_mod.INTERVAL_ENV: str(interval)}
    proc = subprocess.Popen([*SWEEP, "--output-dir", str(tmp_path), "--root", str(repo_root)],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    lines = _timed_lines(proc)
    assert proc.wait(timeout=600) == 0, lines[-5:]
    run_at = next(t for t, text in lines if text == "== run")
    end_at = next(t for t, text in lines if text == "== collect")
    progress = [(t, LINE.match(text)) for t, text in lines if LINE.match(text)]
    assert progress, [text for _, text in lines]
    stamps = [run_at, *(t for t, _ in progress)]
    if end_at - stamps[-1] > interval:
        stamps.append(end_at)
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert max(gaps) < interval + 5, gaps  # the cadence, with room for a loaded machine
    for _, m in progress:
        assert int(m.group(2)) == 45  # 21 jobs, 45 levels
        assert int(m.group(1)) == 0 or m.group(3) != "?"
    assert "\r" not in "".join(text for _, text in lines)


def test_sweep_on_a_terminal_draws_a_bar(tmp_path: Path, repo_root: Path) -> None:
    """stderr a pseudo-terminal: tqdm's bar (carriage-return redraws, a |███| bar)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a real size
    proc = subprocess.Popen([*SWEEP, "--output-dir", str(tmp_path), "--root", str(repo_root)],
                            stderr=slave, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed its side
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=60) == 0
    text = b"".join(chunks).decode(errors="replace")
    assert "\r" in text
    bars = re.findall(r"sweep nightly:\s+\d+%\|[^|]*\| *\d+/45", text)
    assert bars, text[-2000:]
    assert re.search(r"sweep nightly:\s+100%\|█+\| 45/45", text), text[-2000:]
