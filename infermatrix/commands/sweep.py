"""`infermatrix sweep`: the whole pipeline on this machine — plan, run each job, collect, report.

With no arguments it runs matrix/sweeps/smoke.yaml on the simulated engine. The steps are the
same CLI stages the GitHub workflows call, in the same order: ``STAGES`` lists them, ``main`` runs
them in that order, and tests/workflows/ checks .github/workflows/sweep.yml and job.yml against it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial

from ..argtypes import bounded_int
from ..catalog.loader import Catalog, load_catalog
from ..cpus import usable_cpus
from ..errors import UsageError
from ..launch.execute import ENGINE_MODES, engine_mode, execute, install_signal_handlers
from ..launch.executors import search_in_virtual_time
from ..launch.failure import reason_of
from ..launch.job import Interrupted, make_folder
from ..launch.jobs_progress import JobsProgress
from ..launch.pidfile import reap
from ..launch.provenance import new_run_id, utc_now
from ..launch.state import RunLedger, run_id_of, should_run
from ..launch.virtual_pool import LevelPool
from ..plan.cli import add_filter_arguments, filtered_plan, resolve_sweep
from ..plan.jobs import Job
from .run import add_run_arguments, run_settings

# The `infermatrix` subcommands a sweep runs, in order. CI runs the same ones: `validate` and
# `plan` in sweep.yml's plan job, `run` in job.yml once per matrix cell, `collect` and `report`
# in the collect job. CI_ONLY stages need what only CI has (the last published run).
STAGES: tuple[str, ...] = ("validate", "plan", "run", "collect", "report")
CI_ONLY_STAGES: tuple[str, ...] = ("compare",)


def _stage(name: str) -> None:
    print(f"== {name}", file=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", nargs="?", default="smoke", help="sweep name or path (default: smoke)")
    parser.add_argument("--local", action="store_true",
                        help="run every job on this machine (the default; GitHub Actions fans the "
                             "same stages out over self-hosted runners)")
    add_filter_arguments(parser)  # its --engine GLOB filters recipes, as in `infermatrix plan`
    for action in parser._actions:
        if "--engine" in action.option_strings:
            action.help = ("keep jobs whose engine (vllm, sglang, trtllm) matches GLOB "
                           "(repeatable); what serves the jobs is --serve")
    parser.add_argument("--serve", dest="serve", choices=ENGINE_MODES, default=None,
                        help="what serves the jobs, as `infermatrix run --engine`: sim "
                             "(default), real or auto")
    scratch = argparse.ArgumentParser(add_help=False)
    add_run_arguments(scratch)
    group = parser.add_argument_group("how to run")
    for action in scratch._actions:  # all but `run --engine`, which the filter flag doubles as
        if "--engine" not in action.option_strings:
            group._add_action(action)
    group.add_argument("--workers", type=bounded_int(1, 1024), default=usable_cpus(), metavar="N",
                       help="with --virtual: simulate levels in N processes, ahead of recording "
                            "them (default: the CPUs, here %(default)s; 1: in this process)")
    parser.set_defaults(engine_mode="sim")


def split_engine_flags(args: argparse.Namespace) -> None:
    """--serve chooses what serves; --engine filters recipes by engine name. The older spelling
    `--engine sim|real|auto` (never an engine's name) still chooses what serves, with a note."""
    modes = [g for g in args.engine if g in ENGINE_MODES]
    if len(set(modes)) > 1 or (modes and args.serve and args.serve != modes[0]):
        raise UsageError(f"--serve: choose one of {', '.join(ENGINE_MODES)}, not "
                         f"{[*([args.serve] if args.serve else []), *modes]}")
    if modes:
        print(f"note: --engine {modes[0]} chooses what serves; spell it --serve {modes[0]} "
              "(--engine filters jobs by engine name)", file=sys.stderr)
    args.engine_mode = args.serve or (modes[0] if modes else args.engine_mode)
    args.engine = [g for g in args.engine if g not in ENGINE_MODES]
    if args.virtual:
        args.engine_mode = "sim"


def resume_engine(args: argparse.Namespace, engine: object) -> None:
    """A resumed sweep runs on what the run started on (run.json's engine), not the default."""
    if engine == "virtual":
        args.virtual, args.engine_mode = True, "sim"
    elif engine in ENGINE_MODES:
        args.engine_mode = engine


def level_pool(cat: Catalog, args: argparse.Namespace, jobs: list[Job], run_id: str,
               on_done: Callable[[object], None] | None = None) -> LevelPool | None:
    """Workers measuring the virtual levels and capacity searches of ``jobs`` ahead, when
    there are workers and tasks enough to share."""
    levels = [j for j in jobs if j.capacity is None]
    # the largest deployments first: they hold the most agents, so their searches run longest
    searches = sorted((j for j in jobs if j.capacity is not None),
                      key=lambda j: -(cat.recipes[j.recipe].total_gpus
                                      if j.recipe in cat.recipes else 0))
    tasks = sum(len(j.concurrency) for j in levels) + len(searches)
    if not args.virtual or args.workers < 2 or tasks < 2:
        return None
    return LevelPool(cat, levels, min(args.workers, tasks), searches=searches,
                     search=partial(search_in_virtual_time, run_id=run_id), on_done=on_done)


def main(args: argparse.Namespace) -> int:
    from ..evals.publish import run_gate
    from ..report import build_run_report  # the sweep's last stage draws the report

    t0 = time.perf_counter()
    split_engine_flags(args)
    if args.workers < 1:
        raise UsageError(f"--workers: at least 1, got {args.workers}")
    _stage("validate")
    cat = load_catalog(args.root)  # loading cross-validates, exactly as `infermatrix validate`
    _stage("plan")
    run_id = run_id_of(args.run_id, args.resume) or new_run_id()
    run_dir = args.output_dir / run_id
    if args.resume:  # the jobs planned then, with their states (run.json), not a new plan
        ledger, jobs = RunLedger.reopen(run_dir)
        sweep = ledger.doc.get("sweep")
        resume_engine(args, ledger.doc.get("engine"))
    else:
        sweep = resolve_sweep(cat, args.sweep)
        jobs = filtered_plan(cat, sweep, args)
        make_folder(run_dir)
        ledger = RunLedger.create(run_dir, {
            "schema_version": 1, "kind": "run-manifest", "run_id": run_id, "sweep": sweep,
            "engine": "virtual" if args.virtual else engine_mode(args.engine_mode),
            "started_at": utc_now()}, jobs)
    searches = sum(j.capacity is not None for j in jobs)
    print(f"sweep {sweep}: {len(jobs)} jobs, {sum(len(j.concurrency) for j in jobs)} levels"
          + (f", {searches} capacity searches" if searches else "") + f" -> {run_dir}",
          file=sys.stderr)
    install_signal_handlers()
    current: str | None = None
    pool: LevelPool | None = None
    try:
        reap(args.output_dir, lambda m: print(m, file=sys.stderr))  # servers a killed runner left
        _stage("run")
        todo = [j for j in jobs if ledger.state(j.id) != "done"]
        todo_ids = {j.id for j in todo}
        progress = JobsProgress(todo, f"sweep {sweep}")
        pool = level_pool(cat, args, todo, run_id, on_done=progress.measured)
        settings = run_settings(args, pool)
        try:
            with progress.progress.quiet_stderr():
                for i, job in enumerate(jobs, 1):
                    job_dir = run_dir / "jobs" / job.id
                    if ledger.state(job.id) == "done" or not should_run(job_dir, run_id,
                                                                        bool(args.resume)):
                        print(f"[{i}/{len(jobs)}] {job.id}: done already", file=sys.stderr)
                        if job.id in todo_ids:  # another runner's: its units are not ours
                            progress.end(job)
                        continue
                    print(f"[{i}/{len(jobs)}] {job.id}", file=sys.stderr)
                    current = job.id
                    ledger.started(job.id)
                    progress.start(job, job_dir)
                    outcome = execute(cat, job, run_dir, run_id, settings)
                    progress.end(job)
                    ledger.ended(job.id, outcome.job_dir, outcome.status, outcome.error)
                    current = None
                    if outcome.error:  # the reason, not just the headline (the log tail's line)
                        print(f"  {outcome.status}: {reason_of(outcome.error)}", file=sys.stderr)
        finally:
            progress.close()
        if pool is not None:
            pool.close()
        ledger.close()
        _stage("collect")  # build_run_report normalises the raw results into records (collect)
        _stage("report")  # ... and draws the plots and the dashboard from them (report)
        outputs = build_run_report(run_dir, gate=run_gate([run_dir], args.root))  # evals, if any
    except (Interrupted, KeyboardInterrupt) as exc:  # SIGTERM/SIGHUP/SIGINT: torn down already
        ledger.interrupted(current, str(exc) or "SIGINT")
        print(f"interrupted ({exc or 'SIGINT'}): servers stopped, job states in {ledger.path}; "
              f"finish it with: infermatrix sweep --resume {run_id} --output-dir {args.output_dir}",
              file=sys.stderr)
        return 130
    finally:
        if pool is not None:
            pool.close()
    failed = [j for j in ledger.doc["jobs"] if j["status"] != "ok"]
    print(f"done in {time.perf_counter() - t0:.0f} s: {len(jobs) - len(failed)}/{len(jobs)} jobs ok")
    print(f"results: {run_dir}")
    for name, path in outputs.items():
        print(f"  {name}: {path}")
    return 0 if not failed else 1
