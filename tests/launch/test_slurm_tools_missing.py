"""A SLURM fleet on a runner without the SLURM client tools (issue 31): one line naming the
missing tool, not a FileNotFoundError for scancel from the clean-up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from launch_helpers import FakeCluster, run

FAKEBIN = Path(__file__).resolve().parents[1] / "fakebin"


def path_without(tmp_path: Path, *missing: str) -> str:
    """PATH with the fake SLURM tools but ``missing``, and none of the system's."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in FAKEBIN.iterdir():
        if tool.name not in missing:
            (bindir / tool.name).symlink_to(tool)
    rest = [p for p in os.environ["PATH"].split(os.pathsep)
            if p != str(FAKEBIN) and not any((Path(p) / t).exists() for t in missing)]
    return os.pathsep.join([str(bindir), *rest])


@pytest.mark.parametrize(("recipe", "runner", "missing"), [
    ("deepseek-r1-0528/b200-sglang-fp8", "b200-slurm", ("salloc",)),
    ("deepseek-r1-0528/b200-sglang-fp8", "b200-slurm", ("salloc", "srun", "scancel", "sbatch")),
    ("deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8", "gb300-nvl72", ("sbatch",)),
])
def test_missing_slurm_tool_is_named(fake_cluster: FakeCluster, monkeypatch, capsys, tmp_path: Path,
                                     recipe: str, runner: str, missing: tuple[str, ...]) -> None:
    monkeypatch.setenv("PATH", path_without(tmp_path, *missing))
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    rc = run(fake_cluster.root, fake_cluster.out, "t1", recipe, runner, [1])
    err = capsys.readouterr().err
    _, manifest = fake_cluster.manifest("t1")
    assert rc != 0 and manifest["status"] != "ok"
    assert "FileNotFoundError" not in err and "Traceback" not in err
    first = next(t for t in ("salloc", "sbatch", "srun", "scancel") if t in missing)
    assert f"{first}" in manifest["error"] and "not found on PATH" in manifest["error"], manifest
    assert f"fleet {runner!r} is a SLURM fleet" in manifest["error"]
    assert fake_cluster.calls() == []  # nothing was submitted
