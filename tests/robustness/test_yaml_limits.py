"""Catalog files built to hang or exhaust the loader: each is one `file:line` problem and
exit 2 from `infermatrix validate`, in a subprocess bounded in time and memory."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from bounded import assert_problem_lines, call, mini_catalog, run_bounded


def _bomb(levels: int) -> str:
    """The classic: each level an anchored list of ten aliases of the one before."""
    names = [f"l{i}" for i in range(levels)]
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]" for p, n in zip(names, names[1:], strict=False)]
    return "\n".join(lines) + "\n"


CASES = {
    "alias-bomb-9": (_bomb(9), "aliases expand to more than"),  # 10**9 values as a tree
    "alias-bomb-10": (_bomb(10), "aliases expand to more than"),
    "recursive-alias": ("x: &a [*a]\n", "recursive alias"),
    "recursive-mapping": ("x: &a {y: *a}\n", "recursive alias"),
    "deep-flow": ("[" * 20_000 + "]" * 20_000 + "\n", "nested deeper than"),
    "deep-block": ("".join("  " * i + "- \n" for i in range(500)), "nested deeper than"),
    "many-items": ("[" + "1," * 150_000 + "1]\n", "more than"),
    "five-million-items": ("x:\n" + "- 1\n" * 5_000_000, "larger than"),
}


def test_hostile_recipe_files(tmp_path: Path) -> None:
    """All of them in one catalog, one bounded subprocess: each file is one problem line."""
    root = mini_catalog(tmp_path)
    folder = root / "benchmarks" / "x"
    folder.mkdir(parents=True)
    for case, (text, _) in CASES.items():
        (folder / f"{case}.yaml").write_text(text)
    proc = run_bounded(["validate", "--root", str(root)], cwd=root)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = assert_problem_lines(proc.stderr)
    assert len(lines) == len(CASES), lines
    for case, (_, reason) in CASES.items():
        (line,) = [ln for ln in lines if ln.startswith(f"benchmarks/x/{case}.yaml:")]
        assert re.match(rf"benchmarks/x/{case}.yaml:\d+: .*{reason}", line), line


@pytest.mark.parametrize("link", ["ancestor", "self", "file"])
def test_symlink_loop_under_benchmarks(tmp_path: Path, link: str) -> None:
    root = mini_catalog(tmp_path)
    where = root / "benchmarks" / "loop"
    if link == "ancestor":
        where.symlink_to(root / "benchmarks", target_is_directory=True)
    elif link == "self":
        where.symlink_to(where)
    else:
        (root / "benchmarks" / "loop.yaml").symlink_to(root / "benchmarks" / "loop.yaml")
    rc, _, err = call(["validate", "--root", str(root)])
    assert rc == 2, err
    (line,) = assert_problem_lines(err)
    assert "symlink loop" in line and str(where) in line, line


def test_folder_in_place_of_hardware_yaml(tmp_path: Path) -> None:
    root = mini_catalog(tmp_path)
    hw = root / "matrix" / "hardware.yaml"
    hw.unlink()
    hw.mkdir()
    rc, _, err = call(["validate", "--root", str(root)])
    assert rc == 2
    lines = assert_problem_lines(err)
    assert lines[0] == "matrix/hardware.yaml: cannot read file: not a file", lines


@pytest.mark.parametrize("root", ["missing", "empty"])
def test_validate_root_missing_or_empty(tmp_path: Path, root: str) -> None:
    folder = tmp_path / root
    if root == "empty":
        folder.mkdir()
    rc, out, err = call(["validate", "--root", str(folder)])
    assert rc == 2 and "ok:" not in out
    (line,) = err.strip().splitlines()
    assert str(folder) in line


def test_limits_leave_a_real_catalog_alone() -> None:
    """The repository's own catalog loads far inside every limit."""
    from infermatrix.catalog import yamlsrc
    from infermatrix.catalog.loader import catalog_files, default_root

    for path in catalog_files(default_root()):
        assert os.path.getsize(path) < yamlsrc.MAX_BYTES / 20, path
        yamlsrc.load_yaml(path)
