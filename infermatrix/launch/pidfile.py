"""Pid files: every server process a runner starts is written down next to its log, so a runner
that dies without tearing down (``kill -9``, a lost node) leaves a note the next run reads to
stop exactly those processes.

A note names the process by pid *and* start time (``/proc/PID/stat`` field 22) and its command
line, plus the runner that started it (the same triple). ``reap`` acts only when that runner is
gone, and only on processes that still match: the leader itself, or members of its session
(servers start in a session of their own) started no earlier than it. A reused pid, a
neighbour's server or a live runner's server is never touched.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..jsonio import write_json_atomic

SUFFIX = ".pid"
GRACE_S = 10.0
# where a runner's notes live below an --output-dir: <run-id>/jobs/<job-id>/server-<name>.pid
PATTERN = f"*/jobs/*/*{SUFFIX}"


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state is [0], session [3], start [19])."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None if there is no such live process."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0")[:-1]]


def me() -> dict[str, Any]:
    """This process as a note names it."""
    return {"host": platform.node(), "pid": os.getpid(), "start": start_time(os.getpid())}


def alive(who: dict[str, Any]) -> bool:
    """Is the process a note names still running? (Another host's: assumed so — we cannot see.)"""
    if who.get("host") != platform.node():
        return True
    pid = who.get("pid")
    return isinstance(pid, int) and start_time(pid) is not None and start_time(pid) == who.get("start")


def path_for(log_path: Path) -> Path:
    return log_path.with_suffix(SUFFIX)


def record(path: Path, pid: int, argv: list[str]) -> None:
    """Write the note for a process this runner just started."""
    write_json_atomic(path, {"kind": "server-pid", "pid": pid, "start": start_time(pid),
                             "argv": argv, "owner": me()})


def forget(path: Path) -> None:
    path.unlink(missing_ok=True)


def _members(note: dict[str, Any]) -> list[tuple[int, int]]:
    """(pid, start time) of the live processes of the noted server's session that are ours."""
    leader, started = note.get("pid"), note.get("start")
    if not isinstance(leader, int) or not isinstance(started, int):
        return []
    if start_time(leader) is not None and (start_time(leader) != started
                                           or _cmdline(leader) != note.get("argv")):
        return []  # the pid now belongs to another process: its session is not ours
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is None or fields[0] in ("Z", "X") or int(fields[3]) != leader:
            continue
        if int(fields[19]) >= started:
            found.append((int(entry.name), int(fields[19])))
    return found


def _stop(members: list[tuple[int, int]], grace_s: float) -> None:
    """SIGTERM, wait, then SIGKILL what is left — re-checking each start time before a signal."""
    def signal_all(sig: int) -> list[tuple[int, int]]:
        left = []
        for pid, started in members:
            if start_time(pid) == started:
                try:
                    os.kill(pid, sig)
                    left.append((pid, started))
                except (ProcessLookupError, PermissionError):
                    pass
        return left

    members = signal_all(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while members and time.monotonic() < deadline:
        time.sleep(0.1)
        members = [(p, s) for p, s in members if start_time(p) == s]
    signal_all(signal.SIGKILL)


def notes(output_dir: Path) -> Iterator[Path]:
    """Every note below an --output-dir (all runs) or a run folder."""
    if output_dir.is_dir():
        yield from sorted(output_dir.glob(PATTERN))
        yield from sorted(output_dir.glob(PATTERN.split("/", 1)[1]))


def reap(output_dir: Path, log: Callable[[str], None], grace_s: float = GRACE_S) -> list[int]:
    """Stop the servers of runners that died without teardown; return their pids."""
    stopped: list[int] = []
    if not Path("/proc/self/stat").exists():  # no procfs: nothing can be verified, touch nothing
        return stopped
    for path in notes(output_dir):
        try:
            note = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(note, dict) or note.get("kind") != "server-pid":
            continue
        owner = note.get("owner")
        if not isinstance(owner, dict) or alive(owner):
            continue  # a live runner's server (or one on another host): not ours to stop
        members = _members(note)
        if members:
            log(f"stopping {len(members)} process(es) left by an interrupted run: {path} "
                f"(pid {', '.join(str(p) for p, _ in members)})")
            _stop(members, grace_s)
            stopped += [p for p, _ in members]
        forget(path)
    return stopped
