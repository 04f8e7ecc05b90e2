"""`infermatrix check-runner` (job.yml's first step on a fleet's runner): it finds the runner
that runs the step among its parent processes and asks it its version, as on a real runner
(Runner.Worker runs the step's shell; Runner.Listener beside it prints the version)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from imx_workflows import load

from infermatrix.commands.check_runner import MIN_RUNNER_VERSION


def fake_runner(root: Path, version: str) -> Path:
    """A runner's bin/: Runner.Worker runs the step (its argv) as a child, as the real one
    runs the step's shell; Runner.Listener --version prints the version."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "Runner.Worker").write_text('#!/bin/bash\n"$@"\n')
    (bin_dir / "Runner.Listener").write_text(
        f'#!/bin/bash\n[ "$1" = --version ] && echo "{version}"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return bin_dir


def step_under(worker: Path | None, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """job.yml's check-runner step, its script run by bash as the runner would."""
    step = next(s for s in load("job.yml")["jobs"]["run"]["steps"]
                if s.get("run", "").startswith("infermatrix check-runner"))
    argv = ["bash", "-c", step["run"]]
    full = {**os.environ, "GITHUB_ACTIONS": "true", **env,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(worker), *argv] if worker else argv, cwd=tmp_path, env=full,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("version", "ok"), [("2.335.9", False), (MIN_RUNNER_VERSION, True),
                                             ("2.340.1", True), ("3.0.0", True)])
def test_the_runner_is_asked_its_version(tmp_path: Path, version: str, ok: bool) -> None:
    proc = step_under(fake_runner(tmp_path, version) / "Runner.Worker", tmp_path)
    assert (proc.returncode == 0) is ok, proc.stdout + proc.stderr
    if ok:
        assert f"runner {version} (needs {MIN_RUNNER_VERSION} or newer): ok" in proc.stdout
    else:
        assert proc.stdout.startswith("::error title=runner too old::runner 2.335.9:")
        assert "docs/runners.md" in proc.stdout


def test_no_runner_to_ask_warns_and_goes_on(tmp_path: Path) -> None:
    proc = step_under(None, tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("::warning title=runner version")
    outside = step_under(None, tmp_path, GITHUB_ACTIONS="")
    assert outside.returncode == 0 and "nothing to check" in outside.stdout
