"""`infermatrix run`: run one job from a plan (its JSON) or named by recipe/workload/runner,
through launch/'s one loop (``launch.execute``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..argtypes import bounded_float
from ..catalog.loader import Catalog, load_catalog
from ..catalog.safety import safe_id
from ..catalog.schema import MAX_CONCURRENCY, MAX_SECONDS
from ..errors import UsageError
from ..jsonio import loads_bounded, read_bounded
from ..launch.backends import BACKENDS
from ..launch.execute import (
    ENGINE_MODES,
    RunSettings,
    execute,
    install_signal_handlers,
)
from ..launch.job import POLICIES, READY_TIMEOUT_S, Interrupted
from ..launch.jobs_progress import JobsProgress
from ..launch.pidfile import reap
from ..launch.provenance import new_run_id
from ..launch.state import run_id_of, should_run, unfinished_jobs
from ..plan.jobs import Job, default_runner, entry_listing, make_job

MAX_JOB_FILE_BYTES = 64 << 20  # a plan of 10,000 jobs is a few MB


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_argument_group("which job")
    src.add_argument("job_file", nargs="?", type=Path,
                     help="JSON from `infermatrix plan --format json` (a job or a list)")
    src.add_argument("--job-env", metavar="VAR",
                     help="read the job JSON from environment variable VAR (job.yml passes each "
                          "planned job this way, as the planner wrote it)")
    src.add_argument("--job-id", help="pick this job from a list")
    src.add_argument("--recipe", help="recipe id, instead of a job file")
    src.add_argument("--workload", help="workload name, with --recipe")
    src.add_argument("--runner-label", help="runner fleet label, with --recipe (default: the "
                     "first fleet whose hardware runs the recipe)")
    src.add_argument("--concurrency", type=int, nargs="+", help="levels, with --recipe (default: "
                     "those of the sweep that lists the recipe and workload)")
    add_run_arguments(parser)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    run = parser.add_argument_group("how to run")
    run.add_argument("--backend", choices=BACKENDS, default=None,
                     help="how real servers start (default: the fleet's kind in runners/fleets.yaml)")
    run.add_argument("--engine", dest="engine_mode", choices=ENGINE_MODES, default="auto",
                     help="real: the recipe's engine; sim: the simulated engine models the "
                          "recipe's hardware on this machine; auto (default): $INFERMATRIX_ENGINE "
                          "if set, else real on a self-hosted GitHub runner and sim elsewhere")
    run.add_argument("--virtual", action="store_true",
                     help="measure on the simulated engine in virtual time: no server, no "
                          "sleeping, results in the same schema (implies --engine sim)")
    run.add_argument("--model-path", help="what ${MODEL} binds to (default: the fleet's model_dir "
                                          "+ checkpoint, else the checkpoint's HF id)")
    run.add_argument("--on-level-failure", choices=POLICIES, default="continue",
                     help="after a level fails its error-rate threshold: measure the next level "
                          "(default) or stop the job")
    run.add_argument("--ready-timeout", type=bounded_float(0, MAX_SECONDS, lo_open=True),
                     default=READY_TIMEOUT_S, metavar="SECONDS",
                     help=f"health + canary must pass within this (default {READY_TIMEOUT_S:.0f})")
    run.add_argument("--output-dir", type=Path, default=Path("results"),
                     help="results/<run-id>/ is created below this folder")
    run.add_argument("--run-id", help="default: UTC time + random suffix (letters, digits, '._+-')")
    run.add_argument("--resume", metavar="RUN_ID",
                     help="finish that run: re-run only the jobs not done, keeping every level "
                          "already measured (docs/launch.md, Crash safety)")
    run.add_argument("--root", type=Path, help="catalog root (default: this checkout)")


def _check_job(job: Job) -> Job:
    """What a job file may not hold: an id that is no file name, levels out of bounds (a
    capacity job has none: its search picks them within its own bounds)."""
    safe_id(job.id, "job id")  # it names the job's folder
    if job.capacity is None and (
            not job.concurrency or not all(1 <= c <= MAX_CONCURRENCY for c in job.concurrency)):
        raise ValueError(f"concurrency {job.concurrency[:8]}: levels are 1 to {MAX_CONCURRENCY}")
    return job


def _job_from_file(path: Path | str, wanted: str | None, text: str | None = None) -> Job:
    """The job in a plan file (or ``text`` read from elsewhere, named ``path``)."""
    try:
        # a regular file of bounded size and depth: a FIFO, /dev/zero or 100k nested brackets
        # is one line, never a hang or a RecursionError
        data = loads_bounded(text if text is not None else read_bounded(path, MAX_JOB_FILE_BYTES))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read a job: {getattr(exc, 'strerror', None) or exc}") from None
    items = data if isinstance(data, list) else [data]
    if wanted:
        items = [d for d in items if isinstance(d, dict) and d.get("id") == wanted]
    if len(items) != 1:
        raise UsageError(f"{path}: holds {len(items)} matching jobs; name one with --job-id")
    try:
        return _check_job(Job.model_validate(items[0]))
    except ValidationError as exc:  # the first problem, where it is: one line
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        raise UsageError(f"{path}: not a job: {where + ': ' if where else ''}{msg}") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not a job: {str(exc).splitlines()[0]}") from None


def _job_from_flags(cat: Catalog, args: argparse.Namespace) -> Job:
    """The job a person names by hand, built by the planner's constructor. Defaults: the first
    fleet whose hardware runs the recipe, and the levels (and eval policy, capacity bounds) of
    the first sweep entry that lists this recipe and workload."""
    missing = [f for f in ("recipe", "workload") if not getattr(args, f)]
    if missing:
        raise UsageError("give a job file, or --recipe and --workload "
                         f"(missing: {', '.join('--' + m for m in missing)})")
    for kind, name, table in (("recipe", args.recipe, cat.recipes), ("workload", args.workload,
                              cat.workloads)):
        if name not in table:
            raise UsageError(f"unknown {kind} {name!r}")
    runner = args.runner_label or default_runner(cat, args.recipe)
    if runner is None or runner not in cat.fleets:
        raise UsageError(f"unknown runner label {args.runner_label!r}" if args.runner_label
                         else f"no runner fleet can run {args.recipe}; name one with --runner-label")
    found = entry_listing(cat, args.recipe, args.workload)
    sweep, entry = found if found else ("adhoc", None)
    agentic = cat.workloads[args.workload].kind == "agentic"
    if agentic and args.concurrency:
        raise UsageError(f"workload {args.workload!r} is agentic: its capacity search picks the "
                         "levels (drop --concurrency; bounds come from the sweep entry)")
    conc = sorted(set(args.concurrency or (entry.concurrency if entry and not agentic else [])))
    if not conc and not agentic:
        raise UsageError(f"no sweep lists {args.recipe} with {args.workload}: give --concurrency")
    if not all(1 <= c <= MAX_CONCURRENCY for c in conc):
        raise UsageError(f"--concurrency {' '.join(map(str, conc))}: levels are 1 to "
                         f"{MAX_CONCURRENCY}")
    return make_job(cat, sweep, args.recipe, args.workload, runner, [] if agentic else conc, entry)


def _named_job(cat: Catalog, args: argparse.Namespace) -> Job:
    """The job given by --job-env (job.yml), a job file, or by recipe and workload."""
    if args.job_env:
        if args.job_env not in os.environ:
            raise UsageError(f"--job-env: ${args.job_env} is not set")
        return _job_from_file(f"${args.job_env}", args.job_id, os.environ[args.job_env])
    if args.job_file:
        return _job_from_file(args.job_file, args.job_id)
    return _job_from_flags(cat, args)


def run_settings(args: argparse.Namespace, level_pool: Any | None = None) -> RunSettings:
    """The typed settings ``run`` and ``sweep`` hand to launch/, from their flags."""
    return RunSettings(virtual=bool(getattr(args, "virtual", False)),
                       engine_mode=getattr(args, "engine_mode", "auto"),
                       backend=getattr(args, "backend", None),
                       model_path=getattr(args, "model_path", None),
                       on_level_failure=getattr(args, "on_level_failure", "continue"),
                       ready_timeout_s=getattr(args, "ready_timeout", READY_TIMEOUT_S),
                       level_pool=level_pool)


def main(args: argparse.Namespace) -> int:
    cat = load_catalog(args.root)
    run_id = run_id_of(args.run_id, args.resume) or new_run_id()
    run_dir = args.output_dir / run_id
    if args.resume and not (args.job_file or args.job_env or args.recipe):
        jobs = unfinished_jobs(run_dir)  # every job of that run not done yet
        if not jobs:
            print(f"nothing to resume: every job in {run_dir} is done")
    else:
        jobs = [_named_job(cat, args)]
    reap(args.output_dir, lambda m: print(m, file=sys.stderr))  # servers a killed runner left
    install_signal_handlers()
    settings = run_settings(args)
    code = 0
    progress = JobsProgress(jobs, "run")
    try:
        for job in jobs:
            if not should_run(run_dir / "jobs" / job.id, run_id, bool(args.resume)):
                print(f"done already: {run_dir / 'jobs' / job.id}")
                progress.end(job)
                continue
            print(f"job {job.id} -> {run_dir}", file=sys.stderr)
            progress.start(job, run_dir / "jobs" / job.id)
            try:
                with progress.progress.quiet_stderr():
                    outcome = execute(cat, job, run_dir, run_id, settings)
            except (Interrupted, KeyboardInterrupt) as exc:
                print(f"interrupted ({exc or 'SIGINT'}): torn down; see {run_dir}; finish it "
                      f"with --resume {run_id}", file=sys.stderr)
                return 130
            progress.end(job)
            print(f"{outcome.status}: {outcome.job_dir}"
                  + (f" ({outcome.error})" if outcome.error else ""))
            code = code or (0 if outcome.status == "ok" else 1)
    finally:
        progress.close()
    return code
