"""`infermatrix plan SWEEP`: print or export the jobs a sweep expands to."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..argtypes import bounded_float, bounded_int
from ..catalog.loader import Catalog, load_catalog
from ..errors import UsageError
from .empty import why_empty
from .github import MAX_SHARDS, matrix_outputs, write_github_outputs, write_plan
from .incremental import DEFAULT_MAX_AGE_DAYS, incremental_plan
from .jobs import FILTER_NAMES, Filters, Job, plan_sweep
from .planfile import read_plan_file
from .summary import measures, write_summary

MAX_SHARDS_LIMIT = 10_000  # far more than any workflow declares; shards are planned one by one

FILTER_FLAGS = FILTER_NAMES


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    for name in FILTER_FLAGS:
        parser.add_argument(f"--{name}", action="append", default=[], metavar="GLOB",
                            help=f"keep jobs whose {name} matches GLOB, case-insensitive "
                                 "(repeatable)")
    parser.add_argument("--allow-empty", action="store_true",
                        help="plan nothing without failing when the filters match no job "
                             "(by default that is an error naming the filter and its values)")


def filters_from(args: argparse.Namespace) -> Filters:
    return Filters(**{name: getattr(args, name) for name in FILTER_FLAGS})


def filtered_plan(cat: Catalog, sweep: str, args: argparse.Namespace) -> list[Job]:
    """The sweep's jobs under the command line's filters; none is an error unless
    --allow-empty (then a note says why)."""
    filters = filters_from(args)
    jobs = plan_sweep(cat, sweep, filters)
    if not jobs:
        why = "\n".join(why_empty(cat, sweep, filters))
        if not args.allow_empty:
            raise UsageError(f"no jobs to plan: {why}\n(--allow-empty plans nothing without failing)")
        print(f"note: no jobs to plan: {why}", file=sys.stderr)
    return jobs


def resolve_sweep(cat: Catalog, sweep: str) -> str:
    """A sweep is named by its file stem (smoke) or its path (matrix/sweeps/smoke.yaml)."""
    name = Path(sweep).stem if sweep.endswith((".yaml", ".yml")) else sweep
    if name not in cat.sweeps:
        known = ", ".join(sorted(cat.sweeps)) or "none"
        raise UsageError(f"{sweep}: unknown sweep (known: {known})")
    return name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", help="sweep name or path (matrix/sweeps/NAME.yaml), or a plan "
                        "file (.json: `--format json` output, or a shard of --plan-dir); put "
                        "`--` before it when it comes from outside")
    add_filter_arguments(parser)
    parser.add_argument("--format", choices=("table", "json", "github", "matrix"),
                        default="table",
                        help="github: the plan files in --plan-dir and their shard ids as GitHub "
                             "outputs (sweep.yml); matrix: one shard as job.yml's matrix")
    parser.add_argument("--github-output", metavar="PATH",
                        help="file to append GitHub outputs to (default: $GITHUB_OUTPUT)")
    parser.add_argument("--plan-dir", type=Path, default=Path("plan"), metavar="DIR",
                        help="with --format github: the folder for the plan files, one per "
                             "shard (default: plan; sweep.yml uploads it as the artifact `plan`)")
    parser.add_argument("--max-shards", type=bounded_int(0, MAX_SHARDS_LIMIT), default=MAX_SHARDS,
                        help=f"most shards the workflow fans out over (default {MAX_SHARDS})")
    parser.add_argument("--simulate", nargs="?", const="true", default="false",
                        choices=("true", "false"),
                        help="with --format matrix: run the jobs on GitHub-hosted runners in "
                             "virtual time (no GPU), instead of on their fleets' runners")
    parser.add_argument("--summary", metavar="PATH",
                        help="append the plan as a markdown table to PATH (GitHub: "
                             "\"$GITHUB_STEP_SUMMARY\")")
    parser.add_argument("--root", type=Path, help="catalog root (default: this checkout)")
    inc = parser.add_argument_group("incremental planning")
    inc.add_argument("--incremental", nargs="?", const="true", default="false",
                     choices=("true", "false"),
                     help="skip jobs whose fingerprint has a successful result newer than "
                          "--max-age-days in --history (a bare flag means true; put it after "
                          "SWEEP)")
    inc.add_argument("--history", type=Path, metavar="PATH",
                     help="results store (SQLite) or records JSONL; a missing file is empty")
    inc.add_argument("--max-age-days", type=bounded_float(0, 36_500), default=DEFAULT_MAX_AGE_DAYS, metavar="N",
                     help=f"a result younger than this is fresh (default {DEFAULT_MAX_AGE_DAYS})")
    inc.add_argument("--force", action="store_true",
                     help="plan every job even with --incremental")


def _incremental(jobs: list[Job], args: argparse.Namespace) -> list[Job]:
    if getattr(args, "incremental", "false") != "true":
        return jobs
    if args.history is None:
        raise UsageError("--incremental needs --history PATH (the results store or records JSONL)")
    picked = incremental_plan(jobs, args.history, args.max_age_days, force=args.force)
    print(f"incremental: {len(picked.fresh)} of {len(jobs)} jobs have a result newer than "
          f"{args.max_age_days:g} days in {args.history}"
          + (" (--force: planning them anyway)" if args.force else "; skipped"), file=sys.stderr)
    return picked.planned


def _table(jobs: list[Job]) -> str:
    header = ("id", "runner", "gpus", "concurrency", "fingerprint")
    rows = [(j.id, j.runner, str(j.gpus), measures(j), j.fingerprint) for j in jobs]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [header, *rows]]
    searches = sum(j.capacity is not None for j in jobs)
    lines.append(f"{len(jobs)} jobs, {sum(len(j.concurrency) for j in jobs)} concurrency levels"
                 + (f", {searches} capacity searches" if searches else ""))
    return "\n".join(lines)


def _planned(args: argparse.Namespace) -> list[Job]:
    """The jobs of a sweep (expanded from the catalog), or of a plan file written earlier."""
    if args.sweep.endswith(".json"):
        filters = filters_from(args)
        return [j for j in read_plan_file(Path(args.sweep)) if filters.allows(
            model=j.model, hardware=j.hardware, engine=j.engine, workload=j.workload,
            recipe=j.recipe, runner=j.runner)]
    cat = load_catalog(args.root)
    return _incremental(filtered_plan(cat, resolve_sweep(cat, args.sweep), args), args)


def main(args: argparse.Namespace) -> int:
    jobs = _planned(args)
    if args.summary:
        write_summary(jobs, args.sweep, args.summary)
    if args.format == "json":
        json.dump([j.model_dump() for j in jobs], sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "github":
        outputs = write_plan(jobs, args.plan_dir, args.max_shards)
        target = write_github_outputs(outputs, args.github_output)
        print(f"wrote {len(jobs)} jobs in {outputs['shard_count']} shards to {args.plan_dir}/, "
              f"their ids to {target}", file=sys.stderr)
    elif args.format == "matrix":
        target = write_github_outputs(matrix_outputs(jobs, args.simulate == "true"),
                                      args.github_output)
        where = "GitHub-hosted runners, virtual time" if args.simulate == "true" else "fleets"
        print(f"wrote a matrix of {len(jobs)} jobs ({where}) to {target}", file=sys.stderr)
    else:
        print(_table(jobs))
    return 0
