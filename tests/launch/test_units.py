"""Small pure pieces of launch/: argv prefix replacement, /metrics parsing, energy integration,
SLURM options from the fleet entry."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

from infermatrix.launch.backends.base import replace_prefix, safe_name
from infermatrix.launch.drain import drain, in_flight
from infermatrix.launch.monitor import GpuMonitor, Sample


def test_replace_prefix_longest_first_and_repo_relative() -> None:
    commands = {"vllm": ["/x/vllm"], "vllm serve": ["./.venv-vllm/bin/python", "-m", "api", "--model"]}
    resolve = lambda t: "/repo/" + t[2:] if t.startswith("./") else t  # noqa: E731
    assert replace_prefix(["vllm", "serve", "M", "--port", "1"], commands, resolve) == [
        "/repo/.venv-vllm/bin/python", "-m", "api", "--model", "M", "--port", "1"]
    assert replace_prefix(["python3", "-m", "sglang"], commands, resolve) == ["python3", "-m", "sglang"]


def test_safe_name() -> None:
    assert safe_name("imx-20261122T0800Z-ab/c d") == "imx-20261122T0800Z-ab-c-d"


def test_energy_trapezoid_with_edges() -> None:
    mon = GpuMonitor("nvidia", Path("/nonexistent.csv"))
    mon.samples = [Sample(t, g, p, None, None, None)
                   for t in (0.5, 1.5, 2.5, 3.5) for g, p in (("0", 100.0), ("1", 300.0))]
    joules, watts = mon.energy(1.0, 3.0)
    assert abs(joules - 800.0) < 1e-9 and abs(watts - 400.0) < 1e-9
    assert GpuMonitor("nvidia", Path("/x")).energy(0, 1) == (None, None)


def test_amd_smi_csv_rows_are_parsed() -> None:
    mon = GpuMonitor("amd", Path("/x"))
    assert mon._parse("gpu,socket_power,gfx_activity,used_vram,gfx_0_clk", 1.0) is None
    s = mon._parse("3,512,97,180000,2100", 2.0)
    assert s is not None and (s.gpu, s.power_w, s.util_pct, s.clock_mhz) == ("3", 512.0, 97.0, 2100.0)


class _Metrics(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.end_headers()
        self.wfile.write(type(self).body)

    def log_message(self, *args: object) -> None:
        pass


def test_in_flight_sums_running_and_waiting() -> None:
    class Busy(_Metrics):
        body = (b'# HELP x\nvllm:num_requests_running{engine="0"} 2.0\n'
                b'vllm:num_requests_waiting{engine="0"} 1.0\nvllm:num_requests_waiting_by_reason 9\n')

    class Idle(_Metrics):
        body = b"sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n"

    servers = [http.server.HTTPServer(("127.0.0.1", 0), h) for h in (Busy, Idle)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    busy, idle = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
    try:
        assert in_flight(busy) == 3.0 and in_flight(idle) == 0.0
        assert drain([idle])["drained"] is True
        stuck = drain([busy], timeout_s=0.3)
        assert stuck["drained"] is False and "3 requests in flight" in stuck["note"]
    finally:
        for s in servers:
            s.shutdown()
