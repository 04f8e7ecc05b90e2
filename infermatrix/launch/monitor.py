"""GPU power and utilisation, sampled once a second into a CSV while the job runs, and the
energy of each concurrency level integrated from it (joules per output token).

The sampler is the vendor's own tool in its looping mode (``nvidia-smi -lms``, ``amd-smi
metric --watch``), one long-running process read line by line: each row is stamped with our
monotonic clock on arrival, so levels (timed with the same clock) cut the series exactly.
On a remote node the same command runs under the backend's prefix (``srun …``, ``ssh …``).
"""

from __future__ import annotations

import csv
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

INTERVAL_MS = 1000
NVIDIA = ["nvidia-smi", "--query-gpu=index,power.draw,utilization.gpu,memory.used,clocks.sm",
          "--format=csv,noheader,nounits", f"-lms={INTERVAL_MS}"]
AMD = ["amd-smi", "metric", "--power", "--usage", "--mem-usage", "--clock", "--csv",
       f"--watch={INTERVAL_MS // 1000}"]
FIELDS = ("time_utc", "t_s", "gpu", "power_w", "util_pct", "mem_used_mib", "clock_mhz")
# amd-smi CSV column names differ between releases: the first present one is used
AMD_COLUMNS = {"gpu": ("gpu",), "power_w": ("socket_power", "current_socket_power", "average_socket_power"),
               "util_pct": ("gfx_activity", "gfx_usage"), "mem_used_mib": ("used_vram", "vram_used"),
               "clock_mhz": ("gfx_0_clk", "gfx_clk", "clk_gfx")}


def sampler_argv(vendor: str) -> list[str] | None:
    return {"nvidia": NVIDIA, "amd": AMD}.get(vendor)


def _num(text: str) -> float | None:
    try:
        return float(text.strip().split()[0])
    except (ValueError, IndexError):
        return None


@dataclass
class Sample:
    t: float  # time.perf_counter() on arrival
    gpu: str
    power_w: float | None
    util_pct: float | None
    mem_used_mib: float | None
    clock_mhz: float | None


class GpuMonitor:
    def __init__(self, vendor: str, csv_path: Path, prefix: Sequence[str] = ()):
        self.vendor, self.csv_path = vendor, csv_path
        self.argv = [*prefix, *(sampler_argv(vendor) or [])]
        self.samples: list[Sample] = []
        self.error: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._t0 = time.perf_counter()
        self._header: list[str] | None = None

    def start(self) -> GpuMonitor:
        if sampler_argv(self.vendor) is None:
            self.error = f"no GPU sampler for vendor {self.vendor!r}"
            return self
        try:
            self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        except OSError as exc:
            self.error = f"{self.argv[0]}: {exc.strerror or exc}"
            return self
        self._thread = threading.Thread(target=self._read, name="gpu-monitor", daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        with self.csv_path.open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(FIELDS)
            for line in self._proc.stdout:
                now = time.perf_counter()
                sample = self._parse(line, now)
                if sample is None:
                    continue
                self.samples.append(sample)
                out.writerow([datetime.now(UTC).isoformat(timespec="seconds"),
                              f"{now - self._t0:.3f}", sample.gpu, sample.power_w,
                              sample.util_pct, sample.mem_used_mib, sample.clock_mhz])
                fh.flush()  # a crash keeps every sample already taken

    def _parse(self, line: str, now: float) -> Sample | None:
        cells = [c.strip() for c in line.strip().split(",")]
        if len(cells) < 2:
            return None
        if self.vendor == "nvidia":
            if len(cells) < 5 or _num(cells[1]) is None:
                return None
            return Sample(now, cells[0], _num(cells[1]), _num(cells[2]), _num(cells[3]), _num(cells[4]))
        if self._header is None or cells[0].lower() in ("gpu", "timestamp"):  # amd-smi CSV header
            self._header = [c.lower() for c in cells]
            return None
        row = dict(zip(self._header, cells, strict=False))

        def pick(key: str) -> str:
            return next((row[c] for c in AMD_COLUMNS[key] if c in row), "")

        power = _num(pick("power_w"))
        if power is None:
            return None
        return Sample(now, pick("gpu"), power, _num(pick("util_pct")), _num(pick("mem_used_mib")),
                      _num(pick("clock_mhz")))

    def energy(self, t0: float, t1: float) -> tuple[float | None, float | None]:
        """(joules, mean watts) of all GPUs over [t0, t1]: per GPU, the trapezoid rule over its
        samples in the window, with the nearest samples standing in at the edges."""
        total = 0.0
        found = False
        for gpu in sorted({s.gpu for s in self.samples}):
            series = [(s.t, s.power_w) for s in self.samples if s.gpu == gpu and s.power_w is not None]
            if not series:
                continue
            inside = [(t, p) for t, p in series if t0 <= t <= t1]
            before = [(t, p) for t, p in series if t < t0][-1:]
            after = [(t, p) for t, p in series if t > t1][:1]
            edge_l = (t0, (before or inside or after)[0][1])
            edge_r = (t1, (after or inside[::-1] or before)[0][1])
            pts = [edge_l, *inside, edge_r]
            total += sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:], strict=False))
            found = True
        if not found or t1 <= t0:
            return None, None
        return total, total / (t1 - t0)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
