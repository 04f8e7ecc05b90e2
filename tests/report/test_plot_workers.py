"""The report's figures drawn in forked workers (report/plots.py): the same pictures as drawing
them in turn, in a pool whose workers SIGTERM stops."""

from __future__ import annotations

from pathlib import Path

from imx_support.synthetic import SynthJob, write_job
from PIL import Image

from infermatrix.report import plots
from infermatrix.report.plots import write_plots
from infermatrix.results import collect

JOBS = (SynthJob(hardware="H200", engine="sglang", concurrency=(1, 4, 16)),
        SynthJob(hardware="B200", engine="vllm", concurrency=(1, 4, 16), speed=1.7))


def _run(root: Path) -> Path:
    for job in JOBS:
        write_job(root / "run", job)
    return root / "run"


def test_workers_write_the_same_figures_as_one_process(tmp_path: Path) -> None:
    records = collect([_run(tmp_path)]).records
    one = write_plots(records, tmp_path / "one", formats=("png",), workers=1)
    two = write_plots(records, tmp_path / "two", formats=("png",), workers=2)
    assert list(one) == list(two) and len(one) >= 4  # the same files, in the same order
    for name in one:  # the same pixels
        with Image.open(one[name]) as a, Image.open(two[name]) as b:
            assert a.size == b.size and a.tobytes() == b.tobytes(), name


def test_figures_are_drawn_in_a_pool_whose_workers_sigterm_stops(tmp_path: Path,
                                                                  monkeypatch) -> None:  # noqa: ANN001
    """The pool is infermatrix.workers.fork_pool's (tests/test_workers.py), not one whose
    workers would inherit what a sweep's handlers leave (SIGTERM ignored)."""
    used = []
    real = plots.fork_pool
    monkeypatch.setattr(plots, "fork_pool", lambda n: used.append(n) or real(n))
    records = collect([_run(tmp_path)]).records
    assert write_plots(records, tmp_path / "plots", formats=("png",), workers=2)
    assert used == [2]
