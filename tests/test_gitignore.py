"""The README tour writes jobs.json, cap.json and site/ at the root of the checkout: git ignores
them (issue 31), so a tour leaves `git status` clean."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs the git checkout")
@pytest.mark.parametrize("path", ["jobs.json", "cap.json", "site/index.html", "site/history.sqlite",
                                  "plan/shard-0.json"])
def test_tour_outputs_are_ignored(path: str) -> None:
    proc = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=REPO,
                          check=False, timeout=60)
    assert proc.returncode == 0, f"{path} is not ignored"


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs the git checkout")
@pytest.mark.parametrize("path", ["docs/site/x.md", "examples/jobs.json",
                                  "infermatrix/plan/jobs.py"])
def test_files_named_like_them_elsewhere_are_not(path: str) -> None:
    proc = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=REPO,
                          check=False, timeout=60)
    assert proc.returncode == 1  # only the root's tour outputs
