"""Run one job, as `infermatrix run` and `sweep` ask: pick its executor (virtual time, the
simulated engine in real time, or the recipe's engine started by the fleet's kind) and hand it
with the job's strategy to the one loop (``loop.run_measurement``). The settings are typed
(``RunSettings``); the argparse namespace stays in the CLI layer (``commands/``)."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..catalog.loader import Catalog
from ..errors import UsageError
from ..plan.jobs import Job
from .backends import LaunchContext, Launched, starter
from .deploy import start_sim
from .executors import Served, Starter, Virtual
from .job import READY_TIMEOUT_S, STOP_SIGNALS, Interrupted, JobOutcome
from .loop import Executor, run_measurement

ENGINE_MODES = ("auto", "real", "sim")  # what serves a job: see engine_mode()


@dataclass(frozen=True)
class RunSettings:
    """How jobs run: what ``run`` and ``sweep`` read from their flags."""

    virtual: bool = False
    engine_mode: str = "auto"
    backend: str | None = None
    model_path: str | None = None
    on_level_failure: str = "continue"
    ready_timeout_s: float = READY_TIMEOUT_S
    level_pool: Any | None = None  # a virtual sweep's LevelPool (levels measured ahead)


def engine_mode(requested: str) -> str:
    if requested != "auto":
        return requested
    env = os.environ.get("INFERMATRIX_ENGINE", "")
    if env in ("real", "sim"):
        return env
    return "real" if os.environ.get("RUNNER_ENVIRONMENT") == "self-hosted" else "sim"


def model_binding(cat: Catalog, job: Job, model_path: str | None) -> str:
    """${MODEL}: --model-path, else the fleet's model_dir + checkpoint, else the HF id."""
    if model_path:
        return model_path
    name = cat.checkpoint(job.recipe)
    model_dir = cat.fleets[job.runner].model_dir
    if model_dir:
        root = cat.root / model_dir[2:] if model_dir.startswith("./") else Path(model_dir)
        return str(root / name)
    return name


def real_starter(cat: Catalog, job: Job, run_id: str, kind: str,
                 model_path: str | None = None) -> Starter:
    start = starter(kind)

    def launch(job_dir: Path, *, params: dict[str, str]) -> Launched:
        ctx = LaunchContext(cat=cat, job=job, fleet_label=job.runner, fleet=cat.fleets[job.runner],
                            run_id=run_id, job_dir=job_dir,
                            model=model_binding(cat, job, model_path),
                            timeout_minutes=job.timeout_minutes, params=params)
        return start(ctx)

    return launch


def executor_for(cat: Catalog, job: Job, run_id: str, settings: RunSettings) -> Executor:
    """Where the job runs: virtual time, the simulated engine in real time, or the recipe's
    engine started by the fleet's kind (or ``--backend``)."""
    if settings.virtual:
        return Virtual(settings.level_pool)
    if engine_mode(settings.engine_mode) == "sim":
        return Served(partial(start_sim, cat, job.recipe), "local", settings.ready_timeout_s)
    launcher = settings.backend or cat.fleets[job.runner].kind
    return Served(real_starter(cat, job, run_id, launcher, settings.model_path), launcher,
                  settings.ready_timeout_s)


def execute(cat: Catalog, job: Job, run_dir: Path, run_id: str,
            settings: RunSettings) -> JobOutcome:
    """One job through the one loop: its strategy (levels or a capacity search) on its
    executor."""
    if job.recipe not in cat.recipes:
        raise UsageError(f"job {job.id}: unknown recipe {job.recipe!r}")
    if job.runner not in cat.fleets:
        raise UsageError(f"job {job.id}: unknown runner label {job.runner!r}")
    if job.workload not in cat.workloads:
        raise UsageError(f"job {job.id}: unknown workload {job.workload!r}")
    return run_measurement(cat, job, run_dir, run_id, executor_for(cat, job, run_id, settings),
                           on_level_failure=settings.on_level_failure)


def _raise_interrupted(signum: int, _frame: object) -> None:
    for sig in STOP_SIGNALS:  # once: a second signal must not cut the teardown short
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signal.Signals(signum).name)


def install_signal_handlers() -> None:
    """SIGTERM (a cancelled workflow, the runner stopping) and SIGHUP unwind like Ctrl-C, so
    teardown runs and the manifest records the interruption."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise_interrupted)
