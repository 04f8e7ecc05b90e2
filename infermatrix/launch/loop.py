"""The one measurement loop: every job, whatever it measures and wherever it runs.

A measurement is a *strategy* (``strategies.py``: the fixed concurrency levels of a workload, or
the capacity search, which asks for its next level given the last one's result) run by an
*executor* (``executors.py``: a server launched through a backend — a real engine or the
simulated one in real time — or the simulator's virtual time). ``run_measurement`` owns the
lifecycle of every job:

    manifest → launch → readiness → the strategy's levels (each: drain/flush, ``${CONC}``
    bound by ``plan.jobs.conc_params``, the client or the virtual kernel, energy, record) →
    evals (run, or recorded as skipped with the reason) → teardown → manifest closed

Every level's raw result and the manifest are written as soon as they exist, so a crash loses
nothing already measured; teardown always runs (success, errors, SIGTERM).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..catalog.loader import Catalog
from ..plan.jobs import Job
from .executors import Virtual
from .failure import record_failure
from .job import (
    Interrupted,
    JobOutcome,
    LevelFailed,
    finish_manifest,
    identity_block,
    overall_status,
    start_manifest,
)
from .provenance import git_sha
from .readiness import NotReady
from .strategies import strategy_for

if TYPE_CHECKING:
    from ..evals.step import EvalServer
    from .backends.base import Handle

Log = Callable[[str], None]


def stderr_log(message: str) -> None:
    print(message, file=sys.stderr)


@dataclass
class Run:
    """One job under way: what a strategy and an executor share."""

    cat: Catalog
    job: Job
    job_dir: Path
    manifest: dict[str, Any]
    log: Log
    on_level_failure: str = "continue"
    block: dict[str, Any] | None = None  # every result's identity block, once launched

    @property
    def run_id(self) -> str:
        return str(self.manifest["run_id"])


class Executor(Protocol):
    """Where a job's levels run: a launched server, or virtual time."""

    launcher: str
    simulated: bool

    def start(self, run: Run) -> None:
        """Launch and prove it serves (virtual time: nothing to start)."""

    def stop(self) -> None:
        """Tear down what ``start`` made; safe to call after a failed start."""

    def between(self, run: Run, flush: bool, timeout_s: float = 120.0) -> dict[str, Any]:
        """Before a level: drain (and flush the prefix cache); what was done."""

    def level(self, run: Run, conc: int) -> dict[str, Any]:
        """One throughput level: the client's result dict."""

    def energy(self, t0: float, t1: float, result: dict[str, Any]) -> dict[str, Any]:
        """The level's energy figures for its identity block ({} when not sampled)."""

    def died(self) -> Handle | None:
        """The process of the deployment that exited (it can serve no more), or None."""

    def eval_target(self, run: Run) -> EvalServer | str:
        """Where the job's evals send requests, or why they cannot run here."""

    def search(self, run: Run) -> dict[str, Any]:
        """The job's capacity search (each level through ``between``): its document."""


Strategy = Callable[[Run, Executor], None]


def run_measurement(cat: Catalog, job: Job, out_dir: Path, run_id: str, executor: Executor,
                    strategy: Strategy | None = None, log: Log = stderr_log, *,
                    on_level_failure: str = "continue") -> JobOutcome:
    """The lifecycle of one job (see the module's docstring). The manifest is rewritten after
    every step, so whatever happens it says what was measured and what broke."""
    job_dir, manifest = start_manifest(job, out_dir, run_id, executor.launcher)
    run = Run(cat, job, job_dir, manifest, log, on_level_failure)
    strategy = strategy or strategy_for(job)
    interrupted: BaseException | None = None
    try:
        executor.start(run)
        run.block = identity_block(cat, job, run_id, executor.launcher, executor.simulated,
                                   git_sha(cat.root))
        strategy(run, executor)
        manifest["status"] = overall_status(manifest["levels"])
    except (NotReady, LevelFailed) as exc:
        manifest["status"], manifest["error"] = "failed", str(exc)
    except (KeyboardInterrupt, Interrupted) as exc:  # a signal stops the run, not just this job
        manifest["status"], manifest["error"] = "failed", f"interrupted: {exc or 'SIGINT'}"
        manifest["state"] = "interrupted"
        interrupted = exc
    except Exception as exc:  # recorded, never lost: the manifest says what broke
        manifest["status"], manifest["error"] = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        executor.stop()
        finish_manifest(job, job_dir, manifest)
        record_failure(job_dir, manifest, executor.simulated)
    if interrupted is not None:
        raise interrupted
    return JobOutcome(job_dir, manifest["status"], manifest["error"], manifest["levels"])


def run_in_virtual_time(cat: Catalog, job: Job, out_dir: Path, run_id: str, log: Log = stderr_log,
                        *, pool: Any | None = None) -> JobOutcome:
    """``job`` (levels or a capacity search) in the simulator's virtual time, through the one
    loop: the same result files as a real run. ``pool``: a sweep's LevelPool, whose workers
    measured its levels or its search ahead."""
    return run_measurement(cat, job, out_dir, run_id, Virtual(pool), log=log)
