"""Shared fixtures: the repository root and a scratch copy of its catalog."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from imx_support.headless import find_chromium

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


@pytest.fixture
def add_agentic_workload(catalog_copy: Path):  # noqa: ANN201
    """add_agentic_workload(name, sessions=…, turns=…, …, tier=(NAME, speed, ttft_s)): append a
    small synthetic agentic workload to the scratch catalog's workloads.yaml."""

    def add(name: str, *, tier: tuple[str, float, float], duration_s: float, warmup_s: float,
            **distributions: float) -> None:
        dists = ", ".join(f"{k}: {v}" for k, v in distributions.items())
        path = catalog_copy / "matrix" / "workloads.yaml"
        path.write_text(path.read_text() + f"""
{name}:
  kind: agentic
  sessions:
    source: synthetic
    distributions: {{{dists}}}
    duration_s: {duration_s}
    warmup_s: {warmup_s}
  slo_tiers:
    - {{name: {tier[0]}, min_output_speed: {tier[1]}, max_ttft_s: {tier[2]}}}
""")

    return add


@pytest.fixture
def chromium() -> str:
    """Debian's Chromium; skipped where it is missing, except under CI, where that fails."""
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Chromium is required under CI: apt-get install -y chromium")
        pytest.skip("no Chromium installed (apt-get install -y chromium)")
    return binary
