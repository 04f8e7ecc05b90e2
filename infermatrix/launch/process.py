"""A server process we own: started in its own session, logged to a file, always stoppable."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import pidfile

STOP_GRACE_S = 10.0


class ManagedProcess:
    def __init__(self, name: str, argv: Sequence[str], log_path: Path,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("ab")
        full_env = {**os.environ, **(env or {})}
        # A new session makes the process a group leader: stop() reaches its children too,
        # and nothing outside this job is touched.
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=full_env, cwd=cwd,
                                     start_new_session=True)
        # a note in the job folder: if this runner is killed before stop(), the next run
        # (or --resume) stops this process group (launch/pidfile.py)
        self.pidfile = pidfile.path_for(log_path)
        pidfile.record(self.pidfile, self.proc.pid, self.argv)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the whole process group, SIGKILL what is left after the grace period."""
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while self.proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
        self._signal(signal.SIGKILL)  # stragglers in the group, even if the leader exited
        try:
            self.proc.wait(timeout=5)
            pidfile.forget(self.pidfile)
        except subprocess.TimeoutExpired:
            pass  # the note stays: the next run stops what is left
        self._log.close()

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
