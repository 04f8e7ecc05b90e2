"""`infermatrix sim profile`: the operator table measured with PyTorch (--tiny: a tiny model on
the CPU, the same code as on a GPU), written as a profile the simulator loads for the hardware
that names it.

torch is an optional extra (`pip install '.[profile]'`), not a test dependency: the full CUDA
wheel is gigabytes. The measuring runs under any interpreter that has torch (`--python`), so
this test uses this one when it has torch, else vLLM's CPU venv (.venv-vllm, which `make test`
sets up through `make real-engines` and which carries a CPU torch). Without either it skips on
a developer machine and fails under CI, as the real-vLLM tests do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from infermatrix.catalog.loader import load_catalog
from infermatrix.sim import SimRequest, simulate
from infermatrix.sim.config import SimConfig
from infermatrix.sim.perf import PerfModel
from infermatrix.sim.profiles import FORMAT, load_profile

REPO = Path(__file__).resolve().parents[2]
SECTIONS = {"ref", "gemm", "attn_decode", "attn_prefill", "elementwise", "sampling",
            "decode_step", "collective"}


def torch_python() -> str:
    for python in (sys.executable, str(REPO / ".venv-vllm" / "bin" / "python")):
        if Path(python).exists() and subprocess.run(
                [python, "-c", "import torch"], capture_output=True, timeout=300,
                check=False).returncode == 0:
            return python
    message = "no interpreter with torch (pip install '.[profile]' or make real-engines)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def sim(*args: str, timeout: float = 600, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infermatrix.sim", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, env=env)


@pytest.mark.slow  # tens of seconds of CPU measuring on a loaded machine
@pytest.mark.timeout(900)
def test_tiny_profile_is_measured_written_and_loaded_by_the_simulator(tmp_path: Path) -> None:
    out = tmp_path / "profiles" / "cpu-tiny.json"
    proc = sim("profile", "--tiny", "-o", str(out), "--python", torch_python())
    assert proc.returncode == 0, proc.stderr
    assert "profile:" in proc.stdout and "gemm bf16" in proc.stdout, proc.stdout
    doc = load_profile(out)
    assert doc["format"] == FORMAT and doc["hardware"] == "CPU" and doc["tiny"] is True
    sections = {r["section"] for r in doc["results"]}
    assert sections == SECTIONS, sections  # every operator family, collectives over 2 ranks
    assert not doc["errors"], doc["errors"]
    gemm = [r for r in doc["results"] if r["section"] == "gemm"]
    assert {r["name"] for r in gemm} == {"qkv", "o", "gate_up", "down", "lm_head"}
    assert all(r["median_ms"] > 0 for r in doc["results"])

    # a catalog whose CPU entry names the profile: the simulator times its GEMMs by it
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "matrix", root / "matrix")
    shutil.copytree(REPO / "benchmarks", root / "benchmarks")
    shutil.copytree(REPO / "runners", root / "runners")
    hw_file = root / "matrix" / "hardware.yaml"
    hardware = yaml.safe_load(hw_file.read_text())
    hardware["CPU"]["profile"] = "../profiles/cpu-tiny.json"  # relative to the catalog root
    hw_file.write_text(yaml.safe_dump(hardware, sort_keys=False))
    cat = load_catalog(root)
    cfg = SimConfig.from_parts(cat, "CPU", "tiny-llama", "bf16", engine="vllm")
    assert Path(cfg.operator_profile).resolve() == out.resolve()
    run = simulate(cfg, [SimRequest(64, 8) for _ in range(2)], concurrency=2)
    assert all(r.error is None and r.completion_tokens == 8 for r in run.results)
    # the profile, not the tables, times the step: the measured CPU GEMMs are far slower than
    # the tables' share of the CPU entry's nominal peak
    step = PerfModel(cfg).decode_time(4, 4 * 128)
    assert step != PerfModel(replace(cfg, operator_profile="")).decode_time(4, 4 * 128)


def test_profile_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    for args, word in ((["--budget-s", "nan"], "--budget-s"), (["--budget-s", "400"], "--budget-s"),
                       (["--python", str(tmp_path / "nope")], "--python")):
        proc = sim("profile", "--tiny", "-o", str(tmp_path / "p.json"), *args, timeout=120)
        assert proc.returncode == 2 and word in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "p.json").exists()


def test_the_full_table_without_a_gpu_says_so(tmp_path: Path) -> None:
    """Without a CUDA GPU the full table is refused at once (not hours of CPU matmuls)."""
    python = torch_python()
    probe = subprocess.run([python, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=300, check=False)
    if probe.stdout.strip() != "False":
        pytest.skip("a GPU is visible here")
    proc = sim("profile", "-o", str(tmp_path / "p.json"), "--python", python, timeout=300)
    assert proc.returncode == 2 and "--tiny" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "p.json").exists()


def test_a_python_without_torch_is_named_with_the_extra(tmp_path: Path) -> None:
    """An interpreter without torch: one line saying how to get it, no traceback."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    proc = sim("profile", "--tiny", "-o", str(tmp_path / "p.json"),
               "--python", str(venv / "bin" / "python"), timeout=120)
    assert proc.returncode == 2 and "infermatrix[profile]" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1


FAULTY_MEASURE = """
import os, sys
if __name__ == "__main__":
    sys.argv = sys.argv[1:]  # [opmeasure.py, --out, ...]
    sys.path.insert(0, os.path.dirname(sys.argv[0]))
import opmeasure

def crash(self):  # a driver fault: the process dies, no exception, no cleanup
    os._exit(7)

def refuse(self):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")

if __name__ == "__main__":  # not in the collective's spawned ranks
    fault = {"crash": crash, "raise": refuse}[os.environ["FAULT"]]
    setattr(opmeasure.Profiler, os.environ["FAULT_SECTION"], fault)
    sys.exit(opmeasure.main())
"""


@pytest.mark.slow  # three tiny profiles on the CPU
@pytest.mark.timeout(900)
def test_a_fault_while_measuring_loses_nothing_already_measured(tmp_path: Path) -> None:
    """A section that raises is listed in `errors` and the others are measured and written;
    a measuring process that dies, or measurements the simulator cannot fit, leave what was
    measured beside the output, named in one line (exit 2), never lost."""
    torch_py = torch_python()
    (tmp_path / "faulty.py").write_text(FAULTY_MEASURE)
    python = tmp_path / "python"  # an "interpreter" that runs the measuring with a fault in it
    python.write_text(f'#!/bin/sh\nexec "{torch_py}" "{tmp_path / "faulty.py"}" "$@"\n')
    python.chmod(0o755)

    def profile(fault: str, section: str, out: Path) -> subprocess.CompletedProcess[str]:
        return sim("profile", "--tiny", "-o", str(out), "--python", str(python),
                   env={**os.environ, "FAULT": fault, "FAULT_SECTION": section})

    out = tmp_path / "raised.json"
    proc = profile("raise", "sampling", out)
    assert proc.returncode == 0, proc.stderr
    doc = load_profile(out)
    assert [e["section"] for e in doc["errors"]] == ["sampling"], doc["errors"]
    assert "illegal memory access" in doc["errors"][0]["error"]
    sections = {r["section"] for r in doc["results"]}
    assert sections == SECTIONS - {"sampling"}, sections  # the sections after it were measured

    out = tmp_path / "crashed.json"
    proc = profile("crash", "attention", out)
    partial = tmp_path / "crashed.partial.json"
    assert proc.returncode == 2 and str(partial) in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not out.exists()
    kept = json.loads(partial.read_text())
    assert {r["section"] for r in kept["results"]} == {"ref", "gemm"}  # measured before the fault

    # no attention at all: the simulator cannot fit it, so no profile, but the file is kept
    out = tmp_path / "unfittable.json"
    proc = profile("raise", "attention", out)
    unfitted = tmp_path / "unfittable.unfitted.json"
    assert proc.returncode == 2 and str(unfitted) in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not out.exists()
    assert "gemm" in {r["section"] for r in json.loads(unfitted.read_text())["results"]}


def test_opcheck_reads_profiles_and_refuses_what_is_not_one(tmp_path: Path) -> None:
    builtin = REPO / "infermatrix" / "sim" / "data" / "profiles" / "h100-sxm-2026-11.json"
    proc = sim("opcheck", str(builtin), "--hardware", "H100", timeout=120)
    assert proc.returncode == 0, proc.stderr
    for family in ("attention projections", "dense MLP", "LM head", "decode attention",
                   "prefill attention"):
        assert family in proc.stdout, proc.stdout
    # another GPU's measurements, twice as slow in every GEMM: the model it would be judged by
    # misses the bounds (--check: exit 1), and a fit to the file itself holds them
    doc = json.loads(builtin.read_text())
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({**doc, "results": [
        {**r, "median_ms": r["median_ms"] * (2 if r["section"] == "gemm" else 1)}
        for r in doc["results"]]}))
    proc = sim("opcheck", str(slow), "--check", timeout=120)
    assert proc.returncode == 1 and "outside the bounds" in proc.stdout, proc.stdout
    assert "attention projections" in proc.stdout.splitlines()[-1]
    proc = sim("opcheck", str(slow), "--check", "--refit", timeout=120)
    assert proc.returncode == 0 and "outside the bounds" not in proc.stdout, proc.stdout
    bad = tmp_path / "bad.json"
    for text in ("not json", json.dumps({"format": "other/1", "results": []}),
                 json.dumps({"format": FORMAT, "results": [{"section": "gemm"}],
                             "datasheet": {"tflops": {"bf16": 1}, "hbm_tbps": 1}})):
        bad.write_text(text)
        proc = sim("opcheck", str(bad), timeout=120)
        assert proc.returncode == 2 and str(bad) in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr


def test_a_hardware_entry_naming_a_missing_profile_is_refused_at_its_line(tmp_path: Path) -> None:
    root = tmp_path / "catalog"
    for part in ("matrix", "benchmarks", "runners"):
        shutil.copytree(REPO / part, root / part)
    hw_file = root / "matrix" / "hardware.yaml"
    text = hw_file.read_text()
    hw_file.write_text(text.replace("profile: h100-sxm-2026-11", "profile: h100-nowhere", 1))
    line = hw_file.read_text().splitlines().index(next(
        ln for ln in hw_file.read_text().splitlines() if "h100-nowhere" in ln)) + 1
    proc = subprocess.run([sys.executable, "-m", "infermatrix.cli", "validate", "--root",
                           str(root)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"hardware.yaml:{line}" in proc.stderr and "h100-nowhere" in proc.stderr, proc.stderr


def test_the_sustained_clock_script_measures_bursts_and_windows(tmp_path: Path) -> None:
    """scripts/measure_sustained_clock.py (the sustained_clock row's measurement): --tiny runs
    the same phases on the CPU, writes every window and a share per phase; bad input is one
    line, exit 2."""
    script = REPO / "scripts" / "measure_sustained_clock.py"
    out = tmp_path / "s.json"
    proc = subprocess.run([torch_python(), str(script), "--out", str(out), "--tiny",
                           "--seconds", "1"], capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "sustained-clock/1" and doc["tiny"] is True
    assert [p["phase"] for p in doc["phases"]] == ["gemm bf16", "hbm copy"]  # no fp8 on a CPU
    for p in doc["phases"]:
        assert p["burst"] > 0 and p["sustained"] > 0 and len(p["windows"]) >= 1
        assert p["share"] == pytest.approx(p["sustained"] / p["burst"])
    assert "gemm bf16" in proc.stdout and "of burst" in proc.stdout
    proc = subprocess.run([torch_python(), str(script), "--out", str(out), "--seconds", "0"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr


def test_the_mxfp4_moe_script_plans_vllms_shapes_and_refuses_without_its_kernels(
        tmp_path: Path) -> None:
    """scripts/measure_mxfp4_moe.py (the w4a16 rows' measurement): --plan lists the points with
    the block size vLLM's fused_marlin_moe picks and one GPU's share of the experts as vLLM pads
    it for each kernel; asked to measure on a machine without CUDA or without vLLM's kernels it
    says so in one line, exit 2 (the GPU runs are recorded in docs/measurements)."""
    script = REPO / "scripts" / "measure_mxfp4_moe.py"

    def plan(*args: str) -> list[dict[str, object]]:
        proc = subprocess.run([sys.executable, str(script), "--plan", *args],
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    marlin = plan("--tp", "8", "--models", "gpt-oss-120b")
    tiles = {p["tokens"]: p["block_size_m"] for p in marlin}
    # tokens x top-4 / 128 experts a tile, the smallest of 8..64 filled under 0.9
    assert (tiles[1], tiles[232], tiles[1024], tiles[16384]) == (8, 16, 48, 64)
    # Marlin pads hidden to 256 and one GPU's intermediate (2,880 / 8) to 128
    assert {(p["hidden"], p["intermediate"]) for p in marlin} == {(3072, 384)}
    triton = plan("--kernel", "triton", "--models", "gpt-oss-20b")
    assert {(p["hidden"], p["intermediate"], p["experts"]) for p in triton} == {(2880, 2880, 32)}
    assert all("block_size_m" not in p for p in triton)
    proc = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "m.json"),
                           "--lib", str(tmp_path / "missing.so")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
