"""`infermatrix sim validate` reports progress with an ETA on stderr (issue 31) while the
outcome table stays on stdout, untouched."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def test_rows_progress_on_stderr_table_on_stdout() -> None:
    env = {**os.environ, "INFERMATRIX_PROGRESS_INTERVAL": "0.2"}
    proc = subprocess.run([sys.executable, "-m", "infermatrix.cli", "sim", "validate", "--only",
                           "h200", "--no-plot"], capture_output=True, text=True, timeout=600,
                          check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("sim validate: ")]
    assert lines, proc.stderr
    total = int(re.match(r"sim validate: \d+/(\d+) rows", lines[-1]).group(1))
    assert all(re.fullmatch(r"sim validate: \d+/\d+ rows \(\d+%\), [\d:]+ elapsed, ETA \S+", ln)
               for ln in lines), lines
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith(("calibrate ", "report "))]
    assert len(rows) == total  # every outcome row, none lost to the progress lines
    assert "sim validate:" not in proc.stdout
