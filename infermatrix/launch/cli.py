"""`infermatrix run`: run one job from a plan (its JSON) or named by recipe/workload/runner."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

from ..catalog.loader import Catalog, load_catalog
from ..errors import UsageError
from ..plan.jobs import Job, fingerprint, job_id
from .deploy import start_sim
from .job import JobOutcome, run_job
from .provenance import new_run_id

BACKENDS = ("local",)


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
    run.add_argument("--backend", choices=BACKENDS, default="local",
                     help="where servers start (docker and slurm backends: not yet available)")
    run.add_argument("--engine", choices=("sim",), default="sim",
                     help="sim: the simulated engine models the recipe's hardware")
    run.add_argument("--output-dir", type=Path, default=Path("results"),
                     help="results/<run-id>/ is created below this folder")
    run.add_argument("--run-id", help="default: UTC time + random suffix")
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
    recipe = cat.recipes[args.recipe]
    conc = sorted(set(args.concurrency))
    return Job(id=job_id(args.recipe, args.workload, args.runner_label, conc, False), sweep="adhoc",
               recipe=args.recipe, model=recipe.model, hardware=recipe.hardware,
               engine=recipe.engine.name, precision=recipe.precision, mode=recipe.topology.mode,
               workload=args.workload, runner=args.runner_label,
               launcher=cat.fleets[args.runner_label].kind, concurrency=conc,
               gpus=recipe.total_gpus, nodes=1,
               fingerprint=fingerprint(cat, args.recipe, args.workload, args.runner_label, conc),
               timeout_minutes=60)


def execute(cat: Catalog, job: Job, run_dir: Path, run_id: str, args: argparse.Namespace) -> JobOutcome:
    if job.recipe not in cat.recipes:
        raise UsageError(f"job {job.id}: unknown recipe {job.recipe!r}")
    start = partial(start_sim, cat, job.recipe)
    return run_job(cat, job, run_dir, run_id, start, launcher=args.backend)


def main(args: argparse.Namespace) -> int:
    cat = load_catalog(args.root)
    job = _job_from_file(args.job_file, args.job_id) if args.job_file else _job_from_flags(cat, args)
    run_id = args.run_id or new_run_id()
    run_dir = args.output_dir / run_id
    print(f"job {job.id} -> {run_dir}", file=sys.stderr)
    outcome = execute(cat, job, run_dir, run_id, args)
    print(f"{outcome.status}: {outcome.job_dir}" + (f" ({outcome.error})" if outcome.error else ""))
    return 0 if outcome.status == "ok" else 1
