"""Failure records: a job that broke before or during its levels (launch/failure.py writes
``failure.json`` into its job folder). Collect keeps them beside the level records, so a fleet
that broke overnight is reported as broken, not as a fleet with nothing to do."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from .records import NaturalKey, Record, order_runs

KIND = "job-failure"
STAGES = ("launch", "readiness", "levels", "capacity")


class JobFailure(BaseModel):
    """One failed job: where it broke, why, and what job it was (docs/results.md)."""

    model_config = ConfigDict(extra="ignore")

    run_id: str = Field(min_length=1)
    job_id: str = Field(min_length=1)
    recipe: str = Field(min_length=1)
    workload: str = Field(min_length=1)
    runner: str = ""
    model: str | None = None
    hardware: str | None = None
    engine: str | None = None
    fingerprint: str | None = None
    concurrency: list[int] = Field(default_factory=list)
    launcher: str | None = None
    simulated: bool = False
    stage: str = "launch"
    reason: str = "failed"
    log_tail: str = ""
    failed_at: str | None = None
    source: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.run_id, self.job_id)

    def natural_keys(self) -> list[NaturalKey]:
        """The configurations (recipe, workload, runner, level) this job was to measure."""
        return [(self.recipe, self.workload, self.runner, c) for c in self.concurrency]


def parse(doc: dict, source: str | None = None) -> JobFailure:
    """A failure record from its document (pydantic's ValidationError, a ValueError, when
    it is unusable)."""
    return JobFailure.model_validate({**doc, "source": source})


def select(failures: Iterable[JobFailure], runs: Iterable[str] | None) -> list[JobFailure]:
    """The failures of ``runs`` (all when None), by run and job."""
    keep = None if runs is None else set(runs)
    return sorted((f for f in failures if keep is None or f.run_id in keep), key=lambda f: f.key)


def latest(failures: Sequence[JobFailure]) -> dict[NaturalKey, JobFailure]:
    """Configuration → its failure in the latest run that has one (run ids sort by time)."""
    out: dict[NaturalKey, JobFailure] = {}
    for f in sorted(failures, key=lambda f: f.key):
        for key in f.natural_keys():
            out[key] = f
    return out


def not_superseded(failures: Sequence[JobFailure], records: Sequence[Record]
                   ) -> list[JobFailure]:
    """The failures no later run has measured past: a configuration (recipe, workload, runner)
    with an OK level in a run after its failure is no longer failing (a report over a year of
    history lists what is broken now, not every night that ever broke)."""
    order = {run: i for i, run in enumerate(order_runs(
        [(r.run_id, r.started_at) for r in records] + [(f.run_id, f.failed_at) for f in failures]))}
    latest_ok: dict[tuple[str, str, str], int] = {}
    for r in records:
        if r.ok:
            key = (r.recipe, r.workload, r.runner)
            latest_ok[key] = max(latest_ok.get(key, -1), order[r.run_id])
    return [f for f in failures
            if latest_ok.get((f.recipe, f.workload, f.runner), -1) < order[f.run_id]]
