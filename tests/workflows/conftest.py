"""Workflow tests read .github/workflows/ with PyYAML; helpers live in imx_workflows.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
