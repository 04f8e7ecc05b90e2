"""Every recipe and fleet value that reaches an argv, an environment, a container option, a mount
list or a path has a type: a hostile one is one `file:line: field: message` line and exit 2 from
`validate`. Where a value could still be read as an option, the renderers end the options first
(`env --`, `docker run ... -- IMAGE`, `srun ... -- COMMAND`), and the copy-paste commands quote
every word."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infermatrix.cli import main

REPO = Path(__file__).resolve().parents[2]
RECIPE = "benchmarks/tiny/cpu-vllm-bf16.yaml"
ENV_S = "-Ssh -c 'touch PWNED' _"  # GNU env's -S: split the string and run it

# (path into the recipe, hostile value, field named in the message)
HOSTILE_RECIPE: list[tuple[tuple[Any, ...], Any, str]] = [
    (("env",), {ENV_S: 1}, "env"),
    (("env",), {"X=1;touch PWNED;Y": 1}, "env"),
    (("env",), {"A": "1\ntouch PWNED"}, "env.A"),
    (("topology", "pools", 0, "env"), {ENV_S: 1}, "topology.pools[0].env"),
    (("engine", "image"), "--privileged", "engine.image"),
    (("engine", "image"), "--entrypoint=/bin/sh", "engine.image"),
    (("container",), {"mounts": {"/data": "/data,/:/hostroot"}}, "container.mounts"),
    (("container",), {"mounts": {"data": "/data"}}, "container.mounts"),
    (("container",), {"mounts": {"/a:/b": "/data"}}, "container.mounts"),
    (("container",), {"ipc": "--privileged"}, "container.ipc"),
    (("container",), {"devices": ["--privileged"]}, "container.devices"),
    (("container",), {"equals": ["privileged --x"]}, "container.equals"),
    (("checkpoint",), "--help", "checkpoint"),
    (("source", "url"), "javascript:alert(1)", "source.url"),
]
HOSTILE_FLEET: list[tuple[str, Any]] = [
    ("container_image", {"img": "--privileged"}),
    ("container_image", {"--entrypoint=/bin/sh": "img"}),
    ("mounts", {"/data": "/data,/:/hostroot"}),
    ("mounts", {"relative": "/models"}),
    ("workdir", "relative/dir"),
    ("model_dir", "-rf"),
    ("commands", {"vllm serve": ["--privileged", "x"]}),
]


def _catalog(tmp_path: Path) -> Path:
    for name in ("matrix/hardware.yaml", "matrix/models.yaml", "matrix/workloads.yaml",
                 "runners/fleets.yaml", RECIPE):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


def _set(data: dict[str, Any], where: tuple[Any, ...], value: Any) -> None:
    for key in where[:-1]:
        data = data[key]
    data[where[-1]] = value


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize(("where", "value", "field"), HOSTILE_RECIPE,
                         ids=[f"{f}-{i}" for i, (_, _, f) in enumerate(HOSTILE_RECIPE)])
def test_hostile_recipe_value_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          where: tuple[Any, ...], value: Any, field: str) -> None:
    root = _catalog(tmp_path)
    data = yaml.safe_load((root / RECIPE).read_text())
    _set(data, where, value)
    (root / RECIPE).write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", "--root", str(root)]) == 2
    line = _one_line(capsys)
    where_, _, rest = line.partition(": ")
    path, _, lineno = where_.rpartition(":")
    assert path == RECIPE and int(lineno) >= 1, line
    assert rest.startswith(field), line


@pytest.mark.parametrize(("field", "value"), HOSTILE_FLEET,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(HOSTILE_FLEET)])
def test_hostile_fleet_value_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         field: str, value: Any) -> None:
    root = _catalog(tmp_path)
    path = root / "runners" / "fleets.yaml"
    data = yaml.safe_load(path.read_text())
    label = "ascend-a3" if field == "workdir" else "b200-slurm"
    data[label][field] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", "--root", str(root)]) == 2
    line = _one_line(capsys)
    assert line.startswith("runners/fleets.yaml:") and f": {label}.{field}" in line, line


def test_recipe_notes_reach_the_catalog_page_as_text(tmp_path: Path) -> None:
    """Free text is allowed in source.notes, but docs/catalog.md shows it escaped: `<!--` cannot
    hide the rest of the page, no raw HTML, no link."""
    root = _catalog(tmp_path)
    data = yaml.safe_load((root / RECIPE).read_text())
    data["source"]["notes"] = "<!-- hidden <img src=x onerror=alert(1)> [x](javascript:a) $x$"
    (root / RECIPE).write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "catalog.md"
    assert main(["catalog", "--root", str(root), "-o", str(out)]) == 0
    page = out.read_text()
    for markup in (r"<!--", r"<img", r"\]\(javascript", r"\$x\$"):  # unescaped, they are markup
        assert not re.search(r"(?<!\\)" + markup, page.split("\n", 3)[3]), markup
    assert "\\<\\!-- hidden" in page


def _sh_words(line: str) -> list[str]:
    """What bash makes of one line: the argv of its first simple command."""
    out = subprocess.run(["bash", "-c", 'f() { printf "%s\\0" "$@"; }; eval "f $1"', "_", line],
                         capture_output=True, text=True, check=True)
    return out.stdout.split("\0")[:-1]


def test_export_lines_quote_the_name(tmp_path: Path) -> None:
    """Even a name the schema would refuse is one word of an `export` line."""
    from infermatrix.engines import export_lines

    for name in ("X=1;touch PWNED;Y", "$(touch PWNED)", ENV_S):
        (line,) = export_lines({name: "1"})
        subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, check=False)
        assert not (tmp_path / "PWNED").exists(), line
        assert _sh_words(line.removeprefix("export ")) == [f"{name}=1"]


def test_env_ends_its_options() -> None:
    """`env --` before NAME=VALUE (the launchers' `docker run ... -- IMAGE` and `srun ... --
    COMMAND` are checked in tests/launch)."""
    from infermatrix.engines import env_argv

    assert env_argv({"A": "1"}) == ["env", "--", "A=1"] and env_argv({}) == []
    # the real env: '--' makes a name starting with '-' an assignment, never an option
    out = subprocess.run([*env_argv({"A": "-Sx"}), "sh", "-c", 'echo "$A"'],
                         capture_output=True, text=True, check=True)
    assert out.stdout == "-Sx\n"


@pytest.mark.parametrize("path", ["../../../etc/passwd", "/etc/passwd", "traces/../../x", "-x"])
def test_workload_file_stays_inside_the_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                path: str) -> None:
    """An agentic workload's trace path is relative to the catalog root and never leaves it."""
    root = _catalog(tmp_path)
    wl = root / "matrix" / "workloads.yaml"
    data = yaml.safe_load(wl.read_text())
    data["agentic-coding"]["sessions"] = {"source": "trace", "path": path}
    wl.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["validate", "--root", str(root)]) == 2
    line = _one_line(capsys)
    assert line.startswith("matrix/workloads.yaml:") and "agentic-coding.sessions.path" in line, line
