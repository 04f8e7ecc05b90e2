"""The launch tests' fake cluster (tests/fakebin on PATH, a scratch catalog, a check that
nothing is left running), shared by loading tests/launch/conftest.py under its own name."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

LAUNCH_TESTS = Path(__file__).resolve().parents[1] / "launch"
sys.path.insert(0, str(LAUNCH_TESTS))  # for its `from launch_helpers import ...`
_spec = importlib.util.spec_from_file_location("launch_conftest", LAUNCH_TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_launch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_launch)

fake_cluster = _launch.fake_cluster


@pytest.fixture
def fleet_catalog(tmp_path: Path) -> Path:
    """The catalog's entry files without recipes or sweeps: fleets load and validate in a
    fraction of the whole catalog's time."""
    repo = Path(__file__).resolve().parents[2]
    for name in ("matrix/hardware.yaml", "matrix/models.yaml", "matrix/workloads.yaml",
                 "runners/fleets.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(repo / name, tmp_path / name)
    return tmp_path
