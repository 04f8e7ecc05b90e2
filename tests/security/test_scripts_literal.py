"""Hostile but valid values (shell metacharacters, spaces) reach the generated batch script,
the #SBATCH lines, srun and ssh as literal text: a real `infermatrix run` against the fake
cluster tools, which execute the scripts with bash, creates no file named PWNED anywhere and
every value arrives in argv exactly as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from launch_helpers import run

PWN = ";touch PWNED;$(touch PWNED2);`touch PWNED3`"


def _pwned(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("PWNED*")] + [
        p for p in map(Path, ("PWNED", "PWNED2", "PWNED3")) if p.exists()]


def test_sbatch_script_and_directives(fake_cluster: Any, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8"  # multi-node: sbatch
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    monkeypatch.setenv("FAKEBIN_SIM_PORTS", "8000")
    comment = f"--comment=bench run {PWN}"
    fake_cluster.edit_fleet("gb300-nvl72", slurm_args=[comment])
    out = tmp_path / f"out dir{PWN}"  # the job folder: #SBATCH --output and launch.sh paths
    rc = run(fake_cluster.root, out, "inj1", recipe, "gb300-nvl72", [1], "--ready-timeout", "120")
    (manifest_path,) = (out / "inj1" / "jobs").glob("*/manifest.json")
    job_dir = manifest_path.parent
    assert rc == 0, manifest_path.read_text()
    header = [ln for ln in (job_dir / "job.sbatch").read_text().splitlines()
              if ln.startswith("#SBATCH")]
    assert f'#SBATCH --comment="bench run {PWN}"' in header
    assert header[-1] == f'#SBATCH --output="{job_dir}/slurm-%j.log"'
    assert list(job_dir.glob("slurm-*.log"))  # sbatch read the quoted path as one value
    assert _pwned(tmp_path, fake_cluster.root) == []


def test_ssh_host_after_double_dash_and_literal_workdir(fake_cluster: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ssh call, the GPU sampler's too, is `ssh OPTIONS -- HOST COMMAND`; the remote
    folder with shell metacharacters in its name is created literally."""
    recipe = "llama-3.1-70b-instruct/h200-vllm-fp8"
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    fleets = fake_cluster.root / "runners" / "fleets.yaml"
    data = yaml.safe_load(fleets.read_text())
    workdir = tmp_path / f"remote dir{PWN}"
    data = {"h200-ssh": {"hardware": "H200", "kind": "ssh", "gpus_per_node": 8,
                         "hosts": [fake_cluster.node(0)], "workdir": str(workdir)}, **data}
    fleets.write_text(yaml.safe_dump(data, sort_keys=False))
    rc = run(fake_cluster.root, fake_cluster.out, "inj2", recipe, "h200-ssh", [1],
             "--ready-timeout", "120")
    _, manifest = fake_cluster.manifest("inj2")
    assert rc == 0 and manifest["status"] == "ok", manifest
    calls = fake_cluster.calls("ssh")
    assert any("nvidia-smi" in c for c in calls)  # the monitor went through ssh too
    for argv in calls:
        assert argv[4:6] == ["--", fake_cluster.node(0)], argv
    assert any(p.is_dir() for p in workdir.rglob("*"))  # the process folder, made literally
    assert _pwned(tmp_path, fake_cluster.root) == []


def test_ssh_argv_refuses_an_option_as_host(fake_cluster: Any) -> None:
    """Below the schema: a host that slipped past it is still never passed to ssh."""
    from infermatrix.catalog.loader import load_catalog
    from infermatrix.launch.backends.base import LaunchContext, LaunchError
    from infermatrix.launch.backends.ssh import ssh_argv
    from infermatrix.plan.jobs import make_job

    cat = load_catalog(fake_cluster.root)
    job = make_job(cat, "adhoc", "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d", "smoke-1k-128",
                   "ascend-a3", [1])
    ctx = LaunchContext(cat=cat, job=job, fleet_label="ascend-a3", fleet=cat.fleets["ascend-a3"],
                        run_id="r", job_dir=fake_cluster.out, model="m")
    assert ssh_argv(ctx, "a3-node-1", "true")[-3:] == ["--", "a3-node-1", "true"]
    with pytest.raises(LaunchError, match="host"):
        ssh_argv(ctx, "-oProxyCommand=touch PWNED", "true")
