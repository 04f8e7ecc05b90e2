"""The eval tests import their helpers from imx_evals_data.py beside this file."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
