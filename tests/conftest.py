"""Shared fixtures: the repository root and a scratch copy of its catalog."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def catalog_copy(tmp_path: Path) -> Path:
    """A writable copy of the repository's catalog (matrix/, runners/, benchmarks/)."""
    for part in ("matrix", "runners", "benchmarks"):
        shutil.copytree(REPO / part, tmp_path / part)
    return tmp_path
