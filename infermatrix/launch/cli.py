"""`infermatrix run`: run one job from a plan (its JSON) or named by recipe/workload/runner."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from ..catalog.loader import Catalog, load_catalog
from ..errors import UsageError
from ..plan.jobs import Job, _nodes, _timeout_minutes, fingerprint, job_id
from .backends import BACKENDS, LaunchContext, Launched, starter
from .deploy import start_sim
from .job import POLICIES, READY_TIMEOUT_S, STOP_SIGNALS, Interrupted, JobOutcome, run_job
from .pidfile import reap
from .provenance import new_run_id
from .state import run_id_of, should_run, unfinished_jobs

ENGINE_MODES = ("auto", "real", "sim")  # what serves a job: see engine_mode()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_argument_group("which job")
    src.add_argument("job_file", nargs="?", type=Path,
                     help="JSON from `infermatrix plan --format json` (a job or a list)")
    src.add_argument("--job-id", help="pick this job from a list")
    src.add_argument("--recipe", help="recipe id, instead of a job file")
    src.add_argument("--workload", help="workload name, with --recipe")
    src.add_argument("--runner-label", help="runner fleet label, with --recipe")
    src.add_argument("--concurrency", type=int, nargs="+", help="levels, with --recipe")
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
    run.add_argument("--ready-timeout", type=float, default=READY_TIMEOUT_S, metavar="SECONDS",
                     help=f"health + canary must pass within this (default {READY_TIMEOUT_S:.0f})")
    run.add_argument("--output-dir", type=Path, default=Path("results"),
                     help="results/<run-id>/ is created below this folder")
    run.add_argument("--run-id", help="default: UTC time + random suffix")
    run.add_argument("--resume", metavar="RUN_ID",
                     help="finish that run: re-run only the jobs not done, keeping every level "
                          "already measured (docs/launch.md, Crash safety)")
    run.add_argument("--root", type=Path, help="catalog root (default: this checkout)")


def _job_from_file(path: Path, wanted: str | None) -> Job:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read a job: {exc}") from None
    items = data if isinstance(data, list) else [data]
    if wanted:
        items = [d for d in items if isinstance(d, dict) and d.get("id") == wanted]
    if len(items) != 1:
        raise UsageError(f"{path}: holds {len(items)} matching jobs; name one with --job-id")
    try:
        return Job.model_validate(items[0])
    except ValueError as exc:
        raise UsageError(f"{path}: not a job: {str(exc).splitlines()[0]}") from None


def _job_from_flags(cat: Catalog, args: argparse.Namespace) -> Job:
    missing = [f for f in ("recipe", "workload", "runner_label", "concurrency") if not getattr(args, f)]
    if missing:
        raise UsageError("give a job file, or --recipe, --workload, --runner-label and --concurrency "
                         f"(missing: {', '.join('--' + m.replace('_', '-') for m in missing)})")
    for kind, name, table in (("recipe", args.recipe, cat.recipes), ("workload", args.workload,
                              cat.workloads), ("runner label", args.runner_label, cat.fleets)):
        if name not in table:
            raise UsageError(f"unknown {kind} {name!r}")
    _fixed_workload(cat, args.workload)
    recipe = cat.recipes[args.recipe]
    conc = sorted(set(args.concurrency))
    # the same id, node count and time-out the planner gives this cell (a per-level job of a
    # recipe whose flags depend on the concurrency carries its .c<N> suffix)
    split = recipe.launch_per_concurrency and len(conc) == 1
    return Job(id=job_id(args.recipe, args.workload, args.runner_label, conc, split), sweep="adhoc",
               recipe=args.recipe, model=recipe.model, hardware=recipe.hardware,
               engine=recipe.engine.name, precision=recipe.precision, mode=recipe.topology.mode,
               workload=args.workload, runner=args.runner_label,
               launcher=cat.fleets[args.runner_label].kind, concurrency=conc,
               gpus=recipe.total_gpus, nodes=_nodes(cat, args.recipe, args.runner_label),
               fingerprint=fingerprint(cat, args.recipe, args.workload, args.runner_label, conc),
               timeout_minutes=_timeout_minutes(cat, args.workload, conc))


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
    recipe = cat.recipes[job.recipe]
    name = recipe.checkpoint or cat.models[recipe.model].hf_id
    model_dir = cat.fleets[job.runner].model_dir
    if model_dir:
        root = cat.root / model_dir[2:] if model_dir.startswith("./") else Path(model_dir)
        return str(root / name)
    return name


def real_starter(cat: Catalog, job: Job, run_id: str, kind: str,
                 args: argparse.Namespace) -> Callable[[Path], Launched]:
    start = starter(kind)

    def launch(job_dir: Path) -> Launched:
        ctx = LaunchContext(cat=cat, job=job, fleet_label=job.runner, fleet=cat.fleets[job.runner],
                            run_id=run_id, job_dir=job_dir,
                            model=model_binding(cat, job, getattr(args, "model_path", None)),
                            timeout_minutes=job.timeout_minutes)
        return start(ctx)

    return launch


def _fixed_workload(cat: Catalog, name: str, job_id: str | None = None) -> None:
    """A job runs a fixed workload; an agentic one is measured by the capacity search."""
    where = f"job {job_id}: " if job_id else ""
    if name not in cat.workloads:
        raise UsageError(f"{where}unknown workload {name!r}")
    if cat.workloads[name].kind == "agentic":
        raise UsageError(f"{where}workload {name!r} is agentic: measure it with "
                         f"`infermatrix capacity --workload {name}`")


def execute(cat: Catalog, job: Job, run_dir: Path, run_id: str, args: argparse.Namespace) -> JobOutcome:
    if job.recipe not in cat.recipes:
        raise UsageError(f"job {job.id}: unknown recipe {job.recipe!r}")
    if job.runner not in cat.fleets:
        raise UsageError(f"job {job.id}: unknown runner label {job.runner!r}")
    _fixed_workload(cat, job.workload, job.id)
    if getattr(args, "virtual", False):
        from .virtual import run_virtual_job

        return run_virtual_job(cat, job, run_dir, run_id)
    if engine_mode(getattr(args, "engine_mode", "sim")) == "sim":
        start: Callable[[Path], Launched] = partial(start_sim, cat, job.recipe)
        launcher = "local"
    else:
        launcher = getattr(args, "backend", None) or cat.fleets[job.runner].kind
        start = real_starter(cat, job, run_id, launcher, args)
    return run_job(cat, job, run_dir, run_id, start, launcher=launcher,
                   on_level_failure=getattr(args, "on_level_failure", "continue"),
                   ready_timeout_s=getattr(args, "ready_timeout", READY_TIMEOUT_S))


def _raise_interrupted(signum: int, _frame: object) -> None:
    for sig in STOP_SIGNALS:  # once: a second signal must not cut the teardown short
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signal.Signals(signum).name)


def install_signal_handlers() -> None:
    """SIGTERM (a cancelled workflow, the runner stopping) and SIGHUP unwind like Ctrl-C, so
    teardown runs and the manifest records the interruption."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise_interrupted)


def main(args: argparse.Namespace) -> int:
    cat = load_catalog(args.root)
    run_id = run_id_of(args.run_id, args.resume) or new_run_id()
    run_dir = args.output_dir / run_id
    if args.resume and not (args.job_file or args.recipe):
        jobs = unfinished_jobs(run_dir)  # every job of that run not done yet
        if not jobs:
            print(f"nothing to resume: every job in {run_dir} is done")
    else:
        jobs = [_job_from_file(args.job_file, args.job_id) if args.job_file
                else _job_from_flags(cat, args)]
    reap(args.output_dir, lambda m: print(m, file=sys.stderr))  # servers a killed runner left
    install_signal_handlers()
    code = 0
    for job in jobs:
        if not should_run(run_dir / "jobs" / job.id, run_id, bool(args.resume)):
            print(f"done already: {run_dir / 'jobs' / job.id}")
            continue
        print(f"job {job.id} -> {run_dir}", file=sys.stderr)
        try:
            outcome = execute(cat, job, run_dir, run_id, args)
        except (Interrupted, KeyboardInterrupt) as exc:
            print(f"interrupted ({exc or 'SIGINT'}): torn down; see {run_dir}; finish it with "
                  f"--resume {run_id}", file=sys.stderr)
            return 130
        print(f"{outcome.status}: {outcome.job_dir}" + (f" ({outcome.error})" if outcome.error else ""))
        code = code or (0 if outcome.status == "ok" else 1)
    return code
