"""Report tests share the results tests' hand-written fixtures (tests/results/imx_results_data.py)
and the headless Chromium the dashboard tests drive."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "results"))
