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
from pathlib import Path
from typing import Any

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
from .run import Executor, Log, Run, Strategy
from .strategies import strategy_for


def stderr_log(message: str) -> None:
    print(message, file=sys.stderr)


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
