"""Requests done, with an ETA, while a benchmark runs: a tqdm bar on a terminal, a plain line
every few seconds where stderr is a log (CI).

Completions only count (``done`` is called on the event loop: a bar redrawn there would cost
the loop time that belongs to timestamps); a daemon thread draws. The package's other
commands use infermatrix/progress.py; the client may import nothing of the package.
"""

from __future__ import annotations

import sys
import threading
from time import perf_counter

from tqdm import tqdm

INTERVAL_S = 8.0  # a log line at least this often ("every 10 s" with room for a loaded machine)
TTY_INTERVAL_S = 0.5


class Progress:
    """``by_time``: a closed-loop run of a fixed window (multi-turn sessions) counts seconds of
    its window, ``total`` of them, not requests (their number is not known up front)."""

    def __init__(self, total: int, enabled: bool, *, by_time: bool = False) -> None:
        self.total = total
        self.enabled = enabled
        self.by_time = by_time
        self.unit = "s" if by_time else "req"
        self.completed = 0
        self.failed = 0
        self._t0 = 0.0
        self._tty = sys.stderr.isatty()
        self._bar: tqdm | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, t0: float) -> None:
        self._t0 = t0
        if not self.enabled:
            return
        if self._tty:
            self._bar = tqdm(total=self.total, desc="bench", unit=self.unit, file=sys.stderr,
                             dynamic_ncols=True, smoothing=0, mininterval=float("inf"))
        self._thread = threading.Thread(target=self._draw, name="bench-progress", daemon=True)
        self._thread.start()

    def done(self, ok: bool) -> None:
        if ok:
            self.completed += 1
        else:
            self.failed += 1

    def _draw(self) -> None:
        interval = TTY_INTERVAL_S if self._tty else INTERVAL_S
        k = 1
        while not self._stop.wait(max(0.0, self._t0 + k * interval - perf_counter())):
            k += 1
            self._show()

    def _show(self) -> None:
        n = self.completed + self.failed
        failed = f"{n} requests, {self.failed} failed" if self.by_time else f"{self.failed} failed"
        if self.by_time:
            n = min(self.total, int(perf_counter() - self._t0))
        if self._bar is not None:
            self._bar.n = n
            self._bar.set_postfix_str(failed, refresh=False)
            self._bar.refresh()
            return
        what = "s of the window" if self.by_time else "requests"
        meter = tqdm.format_meter(
            n, self.total, perf_counter() - self._t0, prefix="[bench]", unit=self.unit,
            bar_format="{desc} {n_fmt}/{total_fmt} " + what + " ({percentage:.0f}%), "
                       "{elapsed} elapsed, ETA {remaining}{postfix}", postfix=failed)
        sys.stderr.write(meter + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        if self._bar is not None:
            self._show()
            self._bar.close()
