"""A virtual sweep's levels measured ahead in worker processes (launch/virtual_pool.py): each
result is exactly the one measuring it in the sweep's process gives, whatever the order it is
asked for in, and no worker outlives the pool."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

from infermatrix.catalog.loader import load_catalog
from infermatrix.launch.virtual import measure_level, result_numbers
from infermatrix.launch.virtual_pool import LevelPool
from infermatrix.plan.jobs import plan_sweep

REPO = Path(__file__).resolve().parents[2]


def _measured(result: dict) -> dict[str, float]:
    """What a level measured (the `infermatrix` block holds when and where it ran)."""
    return {k: v for k, v in result_numbers(result).items() if not k.startswith("infermatrix.")}


def test_workers_give_exactly_what_this_process_measures() -> None:
    cat = load_catalog(REPO)
    jobs = [j for j in plan_sweep(cat, "smoke") if j.capacity is None][:2]
    levels = [(job, conc) for job in jobs for conc in job.concurrency]
    assert len(levels) >= 2
    with LevelPool(cat, jobs, 2) as pool:
        workers = {p.pid for p in multiprocessing.active_children()}
        assert len(workers) == 2 and os.getpid() not in workers
        # asked for in reverse: each level is keyed, not a stream
        ahead = {(job.id, conc): pool.measure(cat, job, conc) for job, conc in reversed(levels)}
        # a level the pool was not given is measured here
        extra = pool.measure(cat, jobs[0], 3)
    assert not multiprocessing.active_children()  # terminated and joined
    for job, conc in levels:
        assert _measured(ahead[job.id, conc]) == _measured(measure_level(cat, job, conc))
    assert _measured(extra) == _measured(measure_level(cat, jobs[0], 3))


def _sweep(out: Path, run_id: str, workers: int) -> dict[str, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "sweep", "smoke", "--virtual", "--engine", "vllm",
         "--workers", str(workers), "--output-dir", str(out), "--run-id", run_id,
         "--root", str(REPO)],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {f"{p.parent.name}/{p.name}": json.loads(p.read_text())
            for p in (out / run_id / "jobs").glob("*/conc-*.json")}


def test_sweep_with_workers_records_the_same_levels(tmp_path: Path) -> None:
    one, two = _sweep(tmp_path, "one", 1), _sweep(tmp_path, "two", 2)
    assert one and one.keys() == two.keys()
    for name, result in one.items():
        assert _measured(result) == _measured(two[name]), name


def test_workers_below_one_are_refused_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "sweep", "smoke", "--virtual", "--workers", "0",
         "--output-dir", str(tmp_path), "--root", str(REPO)],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2
    assert "--workers" in proc.stderr and "Traceback" not in proc.stderr
    assert not any(tmp_path.iterdir())  # refused before any run folder
