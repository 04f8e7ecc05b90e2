"""Every fleet field that reaches a script, an #SBATCH line, an ssh command or a path is
checked when the catalog loads: a hostile value is one `file:line` problem and exit 2 from
`infermatrix validate` (and from `run`, before any tool is called)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infermatrix.cli import main

PWN = "touch PWNED"
# (fleet label, field, hostile value): every field of a fleet entry that leaves the process
HOSTILE: list[tuple[str, str, Any]] = [
    ("b200-slurm", "partition", f"batch\n{PWN}"),
    ("b200-slurm", "partition", "batch --wrap=x"),
    ("b200-slurm", "account", f"acct\n#SBATCH --wrap={PWN}"),
    ("b200-slurm", "account", "-x"),
    ("b200-slurm", "slurm_args", [f"--qos=high\n{PWN}"]),
    ("b200-slurm", "slurm_args", ['--comment=a" --wrap="touch PWNED']),
    ("b200-slurm", "slurm_args", ["--comment=a\\"]),
    ("b200-slurm", "slurm_args", ["qos=high"]),
    ("b200-slurm", "exclude_nodes", [f"node1\n{PWN}"]),
    ("b200-slurm", "exclude_nodes", ["node1 --wrap=x"]),
    ("b200-slurm", "model_cache", f"/lustre\n{PWN}"),
    ("b200-slurm", "mounts", {f"/a\n{PWN}": "/models"}),
    ("b200-slurm", "mounts", {"/a": f"/models\r{PWN}"}),
    ("b200-slurm", "container_image", {"img": f"img\n{PWN}"}),
    ("b200-slurm", "env", {"A;touch PWNED": "1"}),
    ("b200-slurm", "env", {"A": f"1\n{PWN}"}),
    ("b200-slurm", "model_dir", f"/models\x1b]0;{PWN}\x07"),
    ("b200-slurm", "commands", {"vllm serve": ["vllm", f"serve\n{PWN}"]}),
    ("ascend-a3", "hosts", ["-oProxyCommand=touch PWNED"]),
    ("ascend-a3", "hosts", [f"a3-node-1\n{PWN}"]),
    ("ascend-a3", "hosts", ["a3-node-1 -oProxyCommand=x"]),
    ("ascend-a3", "ssh_user", "-oProxyCommand=touch PWNED"),
    ("ascend-a3", "ssh_user", "bench\nx"),
    ("ascend-a3", "workdir", f"/scratch\n{PWN}"),
]


def _edit_fleet(root: Path, label: str, **fields: Any) -> int:
    """Set fields of one fleet; the line of that fleet's entry in the rewritten file."""
    path = root / "runners" / "fleets.yaml"
    data = yaml.safe_load(path.read_text())
    data[label].update(fields)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=False)
    path.write_text(text)
    return next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(f"{label}:"))


@pytest.mark.parametrize(("label", "field", "value"), HOSTILE,
                         ids=[f"{f}-{i}" for i, (_, f, _) in enumerate(HOSTILE)])
def test_hostile_fleet_value_is_rejected(fleet_catalog: Path, capsys: pytest.CaptureFixture[str],
                                         label: str, field: str, value: Any) -> None:
    entry_line = _edit_fleet(fleet_catalog, label, **{field: value})
    rc = main(["validate", "--root", str(fleet_catalog)])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    where, _, rest = lines[0].partition(": ")
    path, _, line = where.rpartition(":")
    assert path == "runners/fleets.yaml" and int(line) > entry_line, lines[0]
    assert rest.startswith(f"{label}.{field}"), lines[0]


def test_every_fleet_string_field_is_covered() -> None:
    """A new string field in Fleet must get a case above (and a check in the schema)."""
    from infermatrix.catalog.schema import Fleet

    numeric_or_fixed = {"hardware", "kind", "gpus_per_node", "nodes", "time_limit_minutes"}
    assert set(Fleet.model_fields) - numeric_or_fixed == {f for _, f, _ in HOSTILE}


def test_run_stops_before_any_tool(fake_cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """`run` on a fleet whose host is an ssh option: exit 2 at load, ssh never called."""
    _edit_fleet(fake_cluster.root, "ascend-a3", hosts=["-oProxyCommand=touch PWNED"])
    rc = main(["run", "--root", str(fake_cluster.root), "--output-dir", str(fake_cluster.out),
               "--recipe", "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d", "--workload", "smoke-1k-128",
               "--runner-label", "ascend-a3", "--concurrency", "1", "--backend", "ssh"])
    err = capsys.readouterr().err
    assert rc == 2 and "runners/fleets.yaml:" in err and "Traceback" not in err, err
    assert fake_cluster.calls() == []
    assert not list(fake_cluster.root.rglob("PWNED")) and not Path("PWNED").exists()


@pytest.mark.parametrize(("label", "fields", "message"), [
    ("ascend-a3", {"hosts": ["a3-node-1"]}, "an ssh fleet lists its hosts"),
    ("h200-dgx", {"hosts": ["node-1"]}, "only for kind: ssh"),
    ("h200-dgx", {"slurm_args": ["--qos=high"]}, "only for kind: slurm"),
])
def test_fleet_fields_fit_its_kind(fleet_catalog: Path, capsys: pytest.CaptureFixture[str],
                                   label: str, fields: dict[str, Any], message: str) -> None:
    """A field the fleet's kind never reads is a mistake, found by validate, not on the cluster."""
    _edit_fleet(fleet_catalog, label, **fields)
    rc = main(["validate", "--root", str(fleet_catalog)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.splitlines()) == 1 and message in err, err
