"""A dispatch input is never read as an option (issue 33): every workflow passes `--` before
an input used as a positional argument, and `--flag=VALUE` for an input used as a value, so
SWEEP=--help plans nothing instead of printing usage and publishing an empty night."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflows"))
from imx_workflows import all_workflows, load, run_steps  # noqa: E402

from infermatrix.cli import main  # noqa: E402

EXPANDS = re.compile(r"\$\{?\w")


def _unsafe_words(argv: list[str]) -> list[str]:
    """Words that expand a variable but could still be read as an option: neither after `--`
    nor attached to their flag (`--flag=$VALUE`)."""
    if "--" in argv:
        argv = argv[:argv.index("--")]
    return [w for w in argv if EXPANDS.search(w) and not re.match(r"--[\w-]+=", w)]


@pytest.mark.parametrize("name", all_workflows())
def test_inputs_come_after_double_dash_or_attached_to_their_flag(name: str) -> None:
    for step in run_steps(name, expand_calls=False):
        for argv in step.commands():
            if argv and argv[0] == "infermatrix":
                words = [w for w in argv if w not in (">>", ">", "$GITHUB_STEP_SUMMARY")]
                assert not _unsafe_words(words), f"{name}: {step.name}: {shlex.join(argv)}"


def _plan_step(name: str) -> str:
    return next(s for s in load("sweep.yml")["jobs"]["plan"]["steps"] if s.get("id") == name)["run"]


@pytest.mark.parametrize("hostile", ["--help", "-h", "--version", "--format=json"])
def test_a_sweep_named_like_an_option_plans_nothing(hostile: str, repo_root: Path,
                                                    tmp_path: Path) -> None:
    """sweep.yml's plan step, run as GitHub runs it, with a hostile sweep and filters."""
    out = tmp_path / "github_output"
    env = {**os.environ, "SWEEP": hostile, "FILTER_MODEL": hostile, "FILTER_HARDWARE": "*",
           "FILTER_ENGINE": "*", "FILTER_WORKLOAD": "*", "INCREMENTAL": "false",
           "MAX_AGE_DAYS": "7", "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": "",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["bash", "-c", _plan_step("plan")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "usage:" not in text and "infermatrix " not in proc.stdout
    assert f"{hostile}: unknown sweep" in proc.stderr
    assert not out.exists() and not (tmp_path / "plan").exists()


def test_the_cli_reads_what_follows_double_dash_as_the_sweep(
        capsys: pytest.CaptureFixture[str], repo_root: Path) -> None:
    assert main(["plan", "--root", str(repo_root), "--", "--help"]) == 2
    assert "--help: unknown sweep" in capsys.readouterr().err
    assert main(["plan", "--root", str(repo_root), "--engine=sglang", "--", "smoke"]) == 0
    assert "1 jobs" in capsys.readouterr().out
