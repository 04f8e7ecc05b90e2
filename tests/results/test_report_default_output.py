"""`infermatrix report RUN` without -o (issue 31): the report goes beside the run's results, as
`infermatrix sweep` writes it; a store's report beside the store; several inputs need -o."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from imx_results_data import messy_run

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infermatrix.cli", *args], capture_output=True,
                          text=True, timeout=180, check=False, cwd=REPO)


def test_report_run_writes_into_the_run(tmp_path: Path) -> None:
    run = messy_run(tmp_path)
    res = cli("report", str(run), "--no-plots")
    assert res.returncode == 0, res.stderr
    assert f"-> {run}" in res.stdout
    assert (run / "index.html").is_file() and (run / "records.jsonl").is_file()


def test_report_store_writes_beside_it(tmp_path: Path) -> None:
    run = messy_run(tmp_path / "runs")
    store = tmp_path / "site" / "history.sqlite"
    store.parent.mkdir()
    assert cli("collect", str(run), "--store", str(store), "-q").returncode == 0
    res = cli("report", str(store), "--no-plots")
    assert res.returncode == 0, res.stderr
    assert (store.parent / "index.html").is_file()


def test_several_inputs_need_an_output(tmp_path: Path) -> None:
    run = messy_run(tmp_path)
    res = cli("report", str(run), str(run), "--no-plots")
    assert res.returncode == 2
    assert res.stderr.splitlines() == ["infermatrix report: -o DIR is needed with several inputs"]
