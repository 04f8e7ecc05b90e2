"""`infermatrix plan SWEEP`: print or export the jobs a sweep expands to."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..catalog.loader import Catalog, load_catalog
from ..errors import UsageError
from .github import MAX_SHARDS, github_outputs, write_github_outputs
from .jobs import Filters, Job, plan_sweep

FILTER_FLAGS = ("model", "hardware", "engine", "workload", "recipe", "runner")


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    for name in FILTER_FLAGS:
        parser.add_argument(f"--{name}", action="append", default=[], metavar="GLOB",
                            help=f"keep jobs whose {name} matches GLOB (repeatable)")


def filters_from(args: argparse.Namespace) -> Filters:
    return Filters(**{name: getattr(args, name) for name in FILTER_FLAGS})


def resolve_sweep(cat: Catalog, sweep: str) -> str:
    """A sweep is named by its file stem (smoke) or its path (matrix/sweeps/smoke.yaml)."""
    name = Path(sweep).stem if sweep.endswith((".yaml", ".yml")) else sweep
    if name not in cat.sweeps:
        known = ", ".join(sorted(cat.sweeps)) or "none"
        raise UsageError(f"{sweep}: unknown sweep (known: {known})")
    return name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", help="sweep name or path (matrix/sweeps/NAME.yaml)")
    add_filter_arguments(parser)
    parser.add_argument("--format", choices=("table", "json", "github"), default="table")
    parser.add_argument("--github-output", metavar="PATH",
                        help="file to append GitHub outputs to (default: $GITHUB_OUTPUT)")
    parser.add_argument("--max-shards", type=int, default=MAX_SHARDS,
                        help=f"shard jobs the workflow declares (default {MAX_SHARDS})")
    parser.add_argument("--root", type=Path, help="catalog root (default: this checkout)")


def _table(jobs: list[Job]) -> str:
    header = ("id", "runner", "gpus", "concurrency", "fingerprint")
    rows = [(j.id, j.runner, str(j.gpus), ",".join(map(str, j.concurrency)), j.fingerprint)
            for j in jobs]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [header, *rows]]
    lines.append(f"{len(jobs)} jobs, {sum(len(j.concurrency) for j in jobs)} concurrency levels")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    cat = load_catalog(args.root)
    jobs = plan_sweep(cat, resolve_sweep(cat, args.sweep), filters_from(args))
    if args.format == "json":
        json.dump([j.model_dump() for j in jobs], sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "github":
        target = write_github_outputs(github_outputs(jobs, args.max_shards), args.github_output)
        print(f"wrote {len(jobs)} jobs to {target}", file=sys.stderr)
    else:
        print(_table(jobs))
    return 0
