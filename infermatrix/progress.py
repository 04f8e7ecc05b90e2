"""Progress of long commands with an ETA, drawn by tqdm: a bar on a terminal, and where stderr
is a log (CI), one plain line at a steady cadence, whether or not work finished in between.

    with Progress(total=147, desc="sweep nightly", unit="level") as progress:
        for job in jobs:
            ...
            progress.advance(len(job.concurrency))

``poll`` (a function returning the units done so far) lets a caller report work that finishes
elsewhere (result files a job writes) without hooks in the code that does it; ``total=None``
is an open-ended count (no ETA). The client has its own (client/progress.py): it may import
nothing of the package.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

from tqdm import tqdm
from tqdm.contrib import DummyTqdmFile

# A log gets a line this often (s): "at least every 10 s" with room for a loaded machine.
LOG_INTERVAL_S = 8.0
TTY_INTERVAL_S = 1.0  # a bar's clock ticks even when nothing finishes
INTERVAL_ENV = "INFERMATRIX_PROGRESS_INTERVAL"  # seconds between log lines (tests, CI taste)
LINE_FORMAT = ("{desc}: {n_fmt}/{total_fmt} {unit}s ({percentage:.0f}%), {elapsed} elapsed, "
               "ETA {remaining}{postfix}")
OPEN_LINE_FORMAT = "{desc}: {n_fmt} {unit}s, {elapsed} elapsed{postfix}"


class _Lines:
    """tqdm redraws one line with carriage returns; a log wants each state as its own line,
    written whole (under ``lock``, which other writers share through ``_Whole``)."""

    def __init__(self, stream: IO[str], lock: threading.Lock) -> None:
        self.stream, self.lock = stream, lock

    def write(self, text: str) -> None:
        lines = [p.rstrip() + "\n" for p in text.replace("\r", "\n").split("\n") if p.strip()]
        if lines:
            with self.lock:
                self.stream.write("".join(lines))
                self.stream.flush()

    def flush(self) -> None:
        self.stream.flush()


class _Whole:
    """stderr for the other writers while progress lines run in a log: their text goes out a
    whole line at a time, so a progress line never lands inside one (print writes a line's
    text and its newline separately)."""

    def __init__(self, stream: IO[str], lock: threading.Lock) -> None:
        self.stream, self.lock = stream, lock
        self.partial = ""

    def write(self, text: str) -> int:
        with self.lock:
            head, newline, self.partial = (self.partial + text).rpartition("\n")
            if newline:
                self.stream.write(head + newline)
        return len(text)

    def flush(self) -> None:
        with self.lock:
            if self.partial:
                self.stream.write(self.partial)
                self.partial = ""
            self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def log_interval() -> float:
    try:
        value = float(os.environ.get(INTERVAL_ENV, LOG_INTERVAL_S))
    except ValueError:
        return LOG_INTERVAL_S
    return value if 0.1 <= value <= 3600 else LOG_INTERVAL_S


class Progress:
    def __init__(self, total: int | None, desc: str, unit: str = "job", *,
                 stream: IO[str] | None = None, poll: Callable[[], int] | None = None,
                 enabled: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.tty = _isatty(self.stream)
        self.poll = poll
        self.interval = TTY_INTERVAL_S if self.tty else log_interval()
        line = LINE_FORMAT if total else OPEN_LINE_FORMAT
        self._lock = threading.Lock()
        self.bar = tqdm(
            total=total, desc=desc, unit=unit, disable=not enabled,
            file=self.stream if self.tty else _Lines(self.stream, self._lock),
            dynamic_ncols=self.tty, smoothing=0,  # ETA from the average rate: jobs vary
            bar_format=None if self.tty else line,
            mininterval=0.5 if self.tty else float("inf"),  # a log: only the steady lines
            delay=0 if self.tty else self.interval, leave=self.tty,
        )
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if enabled:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        # deadlines from the start, so a slow refresh never stretches the cadence
        k = 1
        start = self.bar.start_t
        while not self._stop.wait(max(0.0, start + k * self.interval - self.bar._time())):
            k += 1
            with contextlib.suppress(Exception):  # a progress line never breaks the work
                self._sync()
                self.bar.refresh()

    def _sync(self) -> None:
        if self.poll is not None:
            done = self.poll()
            if done > self.bar.n:
                self.bar.update(done - self.bar.n)

    def advance(self, n: int = 1) -> None:
        self.bar.update(n)

    def set_total(self, total: int) -> None:
        """A new estimate of the work (a search that learns its size as it goes)."""
        self.bar.total = total
        if not self.tty:
            self.bar.bar_format = LINE_FORMAT
        if self.tty:
            self.bar.refresh()

    def note(self, text: str) -> None:
        """What is being worked on, after the counts (a job id)."""
        self.bar.set_postfix_str(text, refresh=False)

    def write(self, text: str, file: IO[str] | None = None) -> None:
        """A line of output (default: to the progress stream) that leaves the bar intact."""
        if self.tty:
            self.bar.write(text, file=file or self.stream)
            return
        with self._lock:  # whole, never split by a progress line
            (file or self.stream).write(text + "\n")

    @contextlib.contextmanager
    def quiet_stderr(self) -> Any:
        """Other stderr lines go above the bar instead of through it (on a terminal), or
        between the progress lines, never inside one (in a log)."""
        if self.stream is not sys.stderr:
            yield
            return
        whole = _Whole(self.stream, self._lock)
        try:
            with contextlib.redirect_stderr(DummyTqdmFile(self.stream) if self.tty else whole):
                yield
        finally:
            whole.flush()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        with contextlib.suppress(Exception):
            self._sync()
        self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
