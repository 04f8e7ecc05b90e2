"""A GPU the simulator has no efficiency data for is still simulated, with a warning (issue 31);
one it knows (by name or vendor) is simulated quietly."""

from __future__ import annotations

import json
import subprocess
import sys

from infermatrix.sim.coverage import has_efficiency_data


def sim_info(hardware: str, model: str, precision: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infermatrix.cli", "sim", "info", "--hardware",
                           hardware, "--model", model, "--precision", precision],
                          capture_output=True, text=True, timeout=120, check=False)


def test_unknown_hardware_is_simulated_with_one_warning() -> None:
    proc = sim_info("CPU", "tiny-llama", "bf16")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hardware"] == "CPU"
    assert proc.stderr.splitlines() == [
        "warning: the simulator has no efficiency data for CPU (vendor cpu): simulated figures "
        "use generic defaults (docs/sim.md)"]


def test_known_hardware_is_quiet() -> None:
    proc = sim_info("H200", "llama-3.1-70b-instruct", "fp8")
    assert proc.returncode == 0 and proc.stderr == ""


def test_coverage_by_name_or_vendor() -> None:
    assert has_efficiency_data("H200", "nvidia")  # rows name it
    assert has_efficiency_data("MI355X", "amd")  # vendor-wide rows
    assert has_efficiency_data("RTX-9000", "nvidia")  # a new NVIDIA GPU: NVIDIA's rows
    assert not has_efficiency_data("CPU", "cpu")
