"""`infermatrix validate` beyond the schema (issue 31): every recipe rendered through its engine,
sweep entries no fleet can run named, warnings for hardware no fleet has or the simulator
does not know."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infermatrix.cli import main

H200_VLLM = Path("benchmarks/llama-3.1-70b-instruct/h200-vllm-fp8.yaml")


def run_validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["validate", *args])
    err = capsys.readouterr().err.strip().splitlines()
    return (code, [e for e in err if not e.startswith("warning: ")],
            [e.removeprefix("warning: ") for e in err if e.startswith("warning: ")])


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_contradicting_tp_copy_fails_with_its_line(tmp_path: Path, repo_root: Path) -> None:
    """parallel.tp 4 with params.TP 8 (so tensor-parallel-size 8) would launch 8-way TP on 4 GPUs."""
    copy = tmp_path / "llama-3.1-70b-instruct" / "h200-tp4.yaml"
    copy.parent.mkdir()
    copy.write_text((repo_root / H200_VLLM).read_text().replace("parallel: {tp: 8}", "parallel: {tp: 4}"))
    proc = subprocess.run([sys.executable, "-m", "infermatrix.cli", "validate", str(copy)],
                          capture_output=True, text=True, check=False, cwd=repo_root)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr
    line = line_of(copy, "tensor-parallel-size: ${TP}")
    assert proc.stderr.splitlines() == [
        f"{copy}:{line}: topology.pools[0].args.tensor-parallel-size: 8 contradicts parallel.tp "
        "(per data-parallel rank) (which means tensor-parallel-size 4)"]


def test_router_without_a_renderer_points_at_its_name(capsys, tmp_path: Path,
                                                      repo_root: Path) -> None:
    """The schema allows dynamo; no renderer exists yet: validate says so, not the launch."""
    src = (repo_root / "benchmarks/deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d.yaml").read_text()
    copy = tmp_path / "deepseek-v3.2" / "dynamo.yaml"
    copy.parent.mkdir()
    copy.write_text(src.replace("  name: sglang-router", "  name: dynamo"))
    code, err, _ = run_validate(capsys, str(copy))
    line = line_of(copy, "name: dynamo")
    assert (code, err) == (2, [f"{copy}:{line}: router.name: no renderer for 'dynamo' yet "
                               "(have sglang-router, vllm-router, trtllm-disaggregated)"])


def test_tp16_on_h200_is_named(capsys, tmp_path: Path, repo_root: Path) -> None:
    """8-GPU H200 fleets of one node cannot run a TP16 instance: every sweep that globs it names it."""
    copy = tmp_path / "llama-3.1-70b-instruct" / "h200-tp16.yaml"
    copy.parent.mkdir()
    copy.write_text((repo_root / H200_VLLM).read_text()
                    .replace("parallel: {tp: 8}", "parallel: {tp: 16}").replace("TP: 8", "TP: 16"))
    code, err, _ = run_validate(capsys, str(copy))
    assert code == 2
    assert err, "the unrunnable recipe must be named"
    line = line_of(repo_root / "matrix/sweeps/nightly.yaml", "recipes: [\"*\"]")
    assert (f"matrix/sweeps/nightly.yaml:{line}: entries[0].recipes: no runner fleet can run "
            "llama-3.1-70b-instruct/h200-tp16 (16 H200 GPUs): the recipe needs 2 nodes of 8 GPUs; "
            "fleet 'h200-dgx' has 1") in err
    assert all("h200-tp16" in e for e in err)


def test_glob_with_named_runners_skips_other_hardware(capsys, catalog_copy: Path) -> None:
    """`recipes: ["*"]` on `runners: [h200-dgx]` means the H200 recipes, not a list of errors."""
    sweep = catalog_copy / "matrix" / "sweeps" / "h200-only.yaml"
    sweep.write_text("entries:\n  - recipes: [\"*\"]\n    workloads: [fixed-1k-1k]\n"
                     "    concurrency: [1]\n    runners: [h200-dgx]\n")
    code, err, _ = run_validate(capsys, "--root", str(catalog_copy))
    assert (code, err) == (0, [])


def test_hardware_with_no_fleet_is_a_warning(capsys, catalog_copy: Path) -> None:
    """A new GPU whose fleet is not set up yet: valid, but its recipes would plan no jobs."""
    hw = catalog_copy / "matrix" / "hardware.yaml"
    text = hw.read_text()
    h200 = text[text.index("\nH200:") + 1:text.index("\nB200:") + 1]
    hw.write_text(text + "\n" + h200.replace("H200:", "H210:", 1))
    recipe = catalog_copy / H200_VLLM.with_name("h210-vllm-fp8.yaml")
    recipe.write_text((catalog_copy / H200_VLLM).read_text().replace("hardware: H200", "hardware: H210"))
    code, err, warns = run_validate(capsys, "--root", str(catalog_copy))
    assert (code, err) == (0, [])
    line = line_of(hw, "H210:")
    assert (f"matrix/hardware.yaml:{line}: H210: no fleet in runners/fleets.yaml has H210: its "
            "recipes plan no jobs (llama-3.1-70b-instruct/h210-vllm-fp8)") in warns


def test_hardware_the_simulator_does_not_know_is_a_warning(capsys, catalog_copy: Path) -> None:
    """A sweep that runs hardware no efficiency row covers, by name or vendor (here the CPU),
    would simulate it from generic defaults: say so. The stock sweeps run none."""
    code, err, warns = run_validate(capsys, "--root", str(catalog_copy))
    assert (code, err, warns) == (0, [], [])
    sweep = catalog_copy / "matrix" / "sweeps" / "cpu.yaml"
    sweep.write_text("entries:\n  - recipes: [tiny/cpu-vllm-bf16]\n    workloads: [smoke-1k-128]\n"
                     "    concurrency: [1]\n")
    code, err, warns = run_validate(capsys, "--root", str(catalog_copy))
    line = line_of(catalog_copy / "matrix/hardware.yaml", "CPU:")
    assert (code, err) == (0, [])
    assert warns == [f"matrix/hardware.yaml:{line}: CPU: the simulator has no efficiency data for "
                     "CPU (vendor cpu): simulated figures use generic defaults (docs/sim.md)"]
