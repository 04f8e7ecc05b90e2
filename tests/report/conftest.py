"""Report tests share the results tests' hand-written fixtures (tests/results/imx_results_data.py)
and the headless Chromium the dashboard tests drive."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from infermatrix.report.headless import find_chromium

sys.path.insert(0, str(Path(__file__).parents[1] / "results"))


@pytest.fixture
def chromium() -> str:
    """Debian's Chromium; skipped where it is missing, except under CI, where that fails."""
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Chromium is required under CI: apt-get install -y chromium")
        pytest.skip("no Chromium installed (apt-get install -y chromium)")
    return binary
