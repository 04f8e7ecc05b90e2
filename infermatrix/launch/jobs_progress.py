"""Progress of `run` and `sweep` in measured units (a concurrency level, or one capacity
search), counted from the result files each job writes (the job lifecycle needs no hook) or,
when the virtual pool measures ahead, as its workers finish (``measured``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..plan.jobs import Job
from ..progress import Progress

CAPACITY_FILE = "capacity.json"  # a capacity job's result (written by launch/strategies.py)


def job_units(job: Job) -> int:
    return 1 if job.capacity is not None else len(job.concurrency)


def recorded_units(job: Job, job_dir: Path) -> int:
    if job.capacity is not None:
        return int((job_dir / CAPACITY_FILE).is_file())
    return min(job_units(job), sum(1 for _ in job_dir.glob("conc-*.json")))


class JobsProgress:
    """``start(job, job_dir)`` when a job begins, ``end(job)`` when it is over (whatever its
    outcome: its units are spent)."""

    def __init__(self, jobs: Sequence[Job], desc: str) -> None:
        self.finished = 0
        self.ahead = 0  # units the virtual pool has measured (recorded later, in order)
        self._current: tuple[Job, Path] | None = None
        kinds = {"level" if j.capacity is None else "search" for j in jobs}
        self.progress = Progress(sum(map(job_units, jobs)), desc,
                                 unit="level" if kinds != {"search"} else "search",
                                 poll=self._done)

    def _done(self) -> int:
        current = self._current
        return max(self.ahead, self.finished + (recorded_units(*current) if current else 0))

    def measured(self, _result: object = None) -> None:
        """A level or search the pool finished (called from its result thread)."""
        self.ahead += 1

    def start(self, job: Job, job_dir: Path) -> None:
        self._current = (job, job_dir)
        self.progress.note(job.id)

    def end(self, job: Job) -> None:
        self._current = None
        self.finished += job_units(job)
        self.progress.advance(max(0, self._done() - self.progress.bar.n))

    def close(self) -> None:
        self.progress.close()
