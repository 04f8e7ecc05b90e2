"""How fast a GPU's tensor cores run when a serving engine keeps them busy for minutes, against
the short bursts a hardware profile times (docs/sim.md "Sustained clock").

    python scripts/measure_sustained_clock.py --out sustained.json [--seconds 45]
    python scripts/measure_sustained_clock.py --out /tmp/s.json --tiny   # CPU, seconds (tests)

For each dtype (bf16; fp8 where torch has ``_scaled_mm`` and the GPU FP8 tensor cores) it times
a prefill-sized GEMM (8,192 tokens through Qwen3-32B's gate_up: N 51,200, K 5,120) first as a
burst (ten calls after two idle seconds, as `sim profile` times), then back to back for
``--seconds``, in windows of about half a second, reading the SM clock, board power and
temperature through NVML at the end of each window. Then a memory-bound phase (a 2 GiB
device-to-device copy, back to back) the same way: decode streams weights and KV, and the
question there is whether its clock holds. Prints one line a phase and writes every window.

The sustained share is the median rate over the second half of the run over the burst rate.
Needs torch (the ``profile`` extra); NVML (``nvidia-ml-py``) is read where present.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from typing import Any

GEMM = (8192, 51200, 5120)  # M, N, K: an 8K prefill chunk through Qwen3-32B's gate_up (TP1)
TINY_GEMM = (64, 256, 128)
COPY_BYTES = 2 * 2**30


class Sensors:
    """SM clock (MHz), power (W) and temperature (C) of GPU 0 through NVML, or nothing."""

    def __init__(self, cuda: bool):
        self.nvml: Any = None
        if not cuda:
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
            self.max_sm_mhz = pynvml.nvmlDeviceGetMaxClockInfo(self.handle, pynvml.NVML_CLOCK_SM)
            self.power_limit_w = pynvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000
        except Exception:  # no NVML here: rates only
            self.nvml = None

    def read(self) -> dict[str, float]:
        if self.nvml is None:
            return {}
        n, h = self.nvml, self.handle
        got = {"sm_mhz": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
               "power_w": n.nvmlDeviceGetPowerUsage(h) / 1000,
               "temp_c": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)}
        try:  # why the clock is held down (a bit mask: 0x4 the power cap, 0x20/0x40 thermal)
            got["clock_event_reasons"] = n.nvmlDeviceGetCurrentClocksThrottleReasons(h)
        except Exception:
            pass
        return got

    def about(self) -> dict[str, float]:
        if self.nvml is None:
            return {}
        return {"max_sm_mhz": self.max_sm_mhz, "power_limit_w": self.power_limit_w}


def timed(torch: Any, cuda: bool, call: Any, n: int) -> float:
    """Seconds ``n`` back-to-back calls take (CUDA events on a GPU)."""
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t = time.perf_counter()
    for _ in range(n):
        call()
    return time.perf_counter() - t


def phase(torch: Any, cuda: bool, sensors: Sensors, name: str, call: Any, work: float,
          unit: str, seconds: float) -> dict[str, Any]:
    """Burst rate after an idle pause, then windows of back-to-back calls for ``seconds``."""
    for _ in range(3):
        call()
    if cuda:
        torch.cuda.synchronize()
    time.sleep(2.0 if cuda else 0.0)  # idle: the clock climbs back to boost
    burst = work * 10 / timed(torch, cuda, call, 10)
    once = max(work / burst, 1e-6)
    per_window = max(1, int(0.5 / once))
    windows, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        rate = work * per_window / timed(torch, cuda, call, per_window)
        windows.append({"t_s": round(time.perf_counter() - t0, 3), "rate": rate, **sensors.read()})
    late = windows[len(windows) // 2:]
    out = {"phase": name, "unit": unit, "burst": burst,
           "sustained": statistics.median(w["rate"] for w in late), "windows": windows}
    out["share"] = out["sustained"] / burst
    for key in ("sm_mhz", "power_w", "temp_c"):
        if late and key in late[0]:
            out[f"late_{key}"] = statistics.median(w[key] for w in late)
    masks = [w["clock_event_reasons"] for w in late if "clock_event_reasons" in w]
    if masks:
        out["late_clock_event_reasons"] = max(set(masks), key=masks.count)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="measure_sustained_clock.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file for every window's figures")
    p.add_argument("--seconds", type=float, default=45.0, help="back-to-back time a phase")
    p.add_argument("--tiny", action="store_true", help="a tiny GEMM on the CPU (tests)")
    args = p.parse_args(argv)
    if not (0 < args.seconds <= 600):
        print(f"--seconds must be within (0, 600], got {args.seconds}", file=sys.stderr)
        return 2
    import torch

    cuda = torch.cuda.is_available() and not args.tiny
    if not cuda and not args.tiny:
        print("no CUDA GPU visible to torch (--tiny runs a tiny GEMM on the CPU)", file=sys.stderr)
        return 3
    dev = torch.device("cuda" if cuda else "cpu")
    sensors = Sensors(cuda)
    m, n, k = TINY_GEMM if args.tiny else GEMM
    flops = 2.0 * m * n * k

    def rand(*shape: int) -> Any:
        return torch.randn(*shape, device=dev, dtype=torch.float32) * 0.02

    phases = []
    x, w = rand(m, k).to(torch.bfloat16), rand(n, k).to(torch.bfloat16)
    phases.append(phase(torch, cuda, sensors, "gemm bf16", lambda: torch.nn.functional.linear(x, w),
                        flops, "TFLOP/s", args.seconds))
    if cuda and hasattr(torch, "_scaled_mm") and torch.cuda.get_device_capability() >= (8, 9):
        x8, w8 = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev)
        phases.append(phase(torch, cuda, sensors, "gemm fp8", lambda: torch._scaled_mm(
            x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16), flops, "TFLOP/s",
            args.seconds))
    nbytes = COPY_BYTES if cuda else 2**22
    src, dst = rand(nbytes // 2).to(torch.bfloat16), rand(nbytes // 2).to(torch.bfloat16)
    phases.append(phase(torch, cuda, sensors, "hbm copy", lambda: dst.copy_(src), 2.0 * nbytes,
                        "TB/s", args.seconds / 2))
    device = torch.cuda.get_device_name(0) if cuda else (platform.processor() or platform.machine())
    doc = {"schema": "sustained-clock/1", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "device": device, "tiny": args.tiny, "gemm_mnk": [m, n, k], "seconds": args.seconds,
           "env": {"torch": torch.__version__, "cuda": torch.version.cuda if cuda else None,
                   **sensors.about()}, "phases": phases}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    print(f"{device}, {args.seconds:g} s a phase, GEMM {m}x{n}x{k}")
    for ph in phases:
        s = 1e12  # TFLOP/s and TB/s alike
        sensed = ", ".join(f"{k[5:]} {ph[k]:.0f}" for k in ("late_sm_mhz", "late_power_w",
                                                            "late_temp_c") if k in ph)
        print(f"  {ph['phase']:10s} burst {ph['burst'] / s:8.1f} {ph['unit']}, sustained "
              f"{ph['sustained'] / s:8.1f} ({ph['share']:.3f} of burst)"
              + (f"; second half: {sensed}" if sensed else "")
              + (f", reasons {ph['late_clock_event_reasons']:#x}"
                 if "late_clock_event_reasons" in ph else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
