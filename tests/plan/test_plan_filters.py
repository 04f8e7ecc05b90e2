"""Plan filters (issue 31): case-insensitive, and a filter that matches nothing is an error that
names it and lists the values it could take, unless --allow-empty."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infermatrix.catalog.loader import load_catalog
from infermatrix.cli import main
from infermatrix.plan.jobs import Filters, plan_sweep


def plan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_hardware_filter_is_case_insensitive(capsys, repo_root: Path) -> None:
    code, out, _ = plan(capsys, "nightly", "--hardware", "h200", "--format", "json",
                        "--root", str(repo_root))
    jobs = json.loads(out)
    assert code == 0
    expected = plan_sweep(load_catalog(repo_root), "nightly", Filters(hardware=["H200"]))
    assert expected and [j["id"] for j in jobs] == [j.id for j in expected]
    assert {j["hardware"] for j in jobs} == {"H200"}


def test_every_filter_ignores_case(repo_root: Path) -> None:
    cat = load_catalog(repo_root)
    exact = plan_sweep(cat, "nightly", Filters(engine=["sglang"], model=["deepseek-r1*"],
                                               runner=["h200-dgx"]))
    shouted = plan_sweep(cat, "nightly", Filters(engine=["SGLang"], model=["DeepSeek-R1*"],
                                                 runner=["H200-DGX"]))
    assert exact and exact == shouted


def test_filter_matching_nothing_names_it_and_its_values(repo_root: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "infermatrix.cli", "plan", "nightly",
                           "--hardware", "h20", "--root", str(repo_root)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    hardware = sorted({j.hardware for j in plan_sweep(load_catalog(repo_root), "nightly")})
    assert (f"--hardware h20: matches no job of sweep nightly; valid values: {', '.join(hardware)}"
            in proc.stderr)
    assert "--allow-empty" in proc.stderr


def test_filters_that_match_only_apart(capsys, repo_root: Path) -> None:
    """H200 and trtllm each match nightly jobs, but no H200 recipe runs TensorRT-LLM."""
    code, _, err = plan(capsys, "nightly", "--hardware", "H200", "--engine", "trtllm",
                        "--root", str(repo_root))
    assert code == 2
    assert "the filters match jobs of sweep nightly one by one but no job together" in err


def test_allow_empty_plans_nothing_and_says_why(capsys, repo_root: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "github_output"
    code, _, err = plan(capsys, "nightly", "--model", "nope*", "--allow-empty", "--format",
                        "github", "--github-output", str(out_file), "--root", str(repo_root))
    assert code == 0
    assert "note: no jobs to plan: --model nope*: matches no job of sweep nightly" in err
    assert "jobs_total<<" in out_file.read_text()


def test_sweep_refuses_an_empty_filtered_plan(capsys, repo_root: Path, tmp_path: Path) -> None:
    code = main(["sweep", "smoke", "--hardware", "tpu*", "--output-dir", str(tmp_path),
                 "--root", str(repo_root)])
    err = capsys.readouterr().err
    assert code == 2
    assert "--hardware tpu*: matches no job of sweep smoke; valid values: H200" in err
    assert not any(tmp_path.iterdir())  # nothing started, no run folder
