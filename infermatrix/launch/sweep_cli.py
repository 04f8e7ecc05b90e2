"""`infermatrix sweep`: the whole pipeline on this machine — plan, run each job, collect, report.

With no arguments it runs matrix/sweeps/smoke.yaml on the simulated engine. The steps are the
same CLI stages the GitHub workflows call, in the same order.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..catalog.loader import load_catalog
from ..jsonio import write_json_atomic
from ..plan.cli import add_filter_arguments, filters_from, resolve_sweep
from ..plan.jobs import plan_sweep
from .cli import add_run_arguments, execute
from .provenance import new_run_id, utc_now


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", nargs="?", default="smoke", help="sweep name or path (default: smoke)")
    add_filter_arguments(parser)
    add_run_arguments(parser)


def main(args: argparse.Namespace) -> int:
    from ..report import build_run_report

    t0 = time.perf_counter()
    cat = load_catalog(args.root)
    sweep = resolve_sweep(cat, args.sweep)
    jobs = plan_sweep(cat, sweep, filters_from(args))
    run_id = args.run_id or new_run_id()
    run_dir = args.output_dir / run_id
    print(f"sweep {sweep}: {len(jobs)} jobs, {sum(len(j.concurrency) for j in jobs)} levels "
          f"-> {run_dir}", file=sys.stderr)
    run_dir.mkdir(parents=True, exist_ok=True)
    run_manifest = {"schema_version": 1, "kind": "run-manifest", "run_id": run_id, "sweep": sweep,
                    "engine": args.engine, "started_at": utc_now(), "jobs": []}
    for i, job in enumerate(jobs, 1):
        print(f"[{i}/{len(jobs)}] {job.id}", file=sys.stderr)
        outcome = execute(cat, job, run_dir, run_id, args)
        run_manifest["jobs"].append({"id": job.id, "status": outcome.status, "error": outcome.error})
        if outcome.error:
            print(f"  {outcome.status}: {outcome.error.splitlines()[0]}", file=sys.stderr)
        write_json_atomic(run_dir / "run.json", run_manifest)
    run_manifest["finished_at"] = utc_now()
    write_json_atomic(run_dir / "run.json", run_manifest)
    outputs = build_run_report(run_dir)
    failed = [j for j in run_manifest["jobs"] if j["status"] != "ok"]
    print(f"done in {time.perf_counter() - t0:.0f} s: {len(jobs) - len(failed)}/{len(jobs)} jobs ok")
    print(f"results: {run_dir}")
    for name, path in outputs.items():
        print(f"  {name}: {path}")
    return 0 if not failed else 1
