#!/usr/bin/env python3
"""How fast is the simulated engine in virtual time on this machine?

Plays the levels of a sweep (default: matrix/sweeps/nightly.yaml) exactly as
``infermatrix sweep SWEEP --virtual`` measures them (launch/virtual.py: the same jobs, the same
drawn lengths, the client's metrics) and reports, per level and in total, the wall seconds of
the simulation and of the metrics, simulated requests and tokens per wall second. With
``--vs-steps`` it also plays each level stepping the engine one batch at a time (the reference
the decode-phase engine is tested against) and reports the speed-up and the largest relative
difference between the two levels' results. ``--repeat N`` times each level N times and keeps
the median.

    .venv/bin/python scripts/bench_sim.py                                 # the nightly sweep
    .venv/bin/python scripts/bench_sim.py --workload 'fixed-1k-1k' --recipe 'llama*' --vs-steps
    .venv/bin/python scripts/bench_sim.py --sweep smoke --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infermatrix.catalog.loader import load_catalog  # noqa: E402
from infermatrix.launch.virtual import level_result, result_numbers, simulate_level  # noqa: E402
from infermatrix.plan.jobs import Filters, plan_sweep  # noqa: E402

TARGET_S = 60.0  # the nightly sweep in virtual time, simulation and metrics, on this machine
def largest_difference(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, float]:
    """(key, relative difference) of the two results' numbers that differ most."""
    na, nb = result_numbers(a), result_numbers(b)
    worst = ("", 0.0)
    for key in na.keys() & nb.keys():
        x, y = na[key], nb[key]
        if math.isclose(x, y, rel_tol=0.0, abs_tol=1e-9):
            continue
        rel = abs(x - y) / max(abs(x), abs(y))
        if rel > worst[1]:
            worst = (key, rel)
    return worst


def timed_level(cat: Any, job: Any, conc: int, stepwise: bool, repeat: int
                ) -> tuple[dict[str, Any], float, float, float, Any]:
    """(result, median simulate wall s, median metrics wall s, median CPU s, the last SimRun).
    CPU seconds say what the machine's other load does not: on a shared machine the wall
    time of the same work varies several-fold."""
    sims, metrics, cpu = [], [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        level = simulate_level(cat, job, conc, stepwise=stepwise)
        t1 = time.perf_counter()
        result = level_result(level)
        metrics.append(time.perf_counter() - t1)
        sims.append(t1 - t0)
        cpu.append(time.process_time() - c0)
    return (result, statistics.median(sims), statistics.median(metrics), statistics.median(cpu),
            level.run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", default="nightly", help="sweep name in matrix/sweeps (default nightly)")
    parser.add_argument("--root", type=Path, help="catalog root (default: this checkout)")
    parser.add_argument("--recipe", action="append", default=[], metavar="GLOB",
                        help="only recipes matching GLOB (repeatable)")
    parser.add_argument("--workload", action="append", default=[], metavar="GLOB",
                        help="only workloads matching GLOB (repeatable)")
    parser.add_argument("--concurrency", type=int, action="append", default=[],
                        help="only this concurrency level (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="time each level N times, keep the median")
    parser.add_argument("--vs-steps", action="store_true",
                        help="also step the engine one batch at a time: speed-up and agreement")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    cat = load_catalog(args.root)
    if args.sweep not in cat.sweeps:
        print(f"bench_sim: unknown sweep {args.sweep!r} (known: {', '.join(cat.sweeps)})", file=sys.stderr)
        return 2
    jobs = plan_sweep(cat, args.sweep, Filters(recipe=args.recipe, workload=args.workload))
    rows = []
    for job in jobs:
        for conc in job.concurrency:
            if args.concurrency and conc not in args.concurrency:
                continue
            result, sim_s, metrics_s, cpu_s, run = timed_level(cat, job, conc, False, args.repeat)
            served = sum(1 for r in run.results if r.error is None)
            row: dict[str, Any] = {
                "recipe": job.recipe, "workload": job.workload, "concurrency": conc,
                "requests": served, "rejected": len(run.results) - served,
                "output_tokens": result["total_output_tokens"], "steps": run.steps,
                "simulate_wall_s": round(sim_s, 4), "metrics_wall_s": round(metrics_s, 4),
                "cpu_s": round(cpu_s, 4),
                "output_tok_per_s_simulated": round(result["output_throughput"], 1)}
            line = (f"{job.recipe:45s} {job.workload:12s} c={conc:<4d} {served:5d} req "
                    f"{run.steps:7d} steps  sim {sim_s:7.3f} s  metrics {metrics_s:6.3f} s  cpu {cpu_s:6.3f} s  "
                    f"simulated {result['output_throughput']:8.0f} tok/s")
            if args.vs_steps:
                ref, ref_s, _, _, _ = timed_level(cat, job, conc, True, args.repeat)
                key, rel = largest_difference(result, ref)
                row.update(stepwise_simulate_wall_s=round(ref_s, 4),
                           speedup_vs_steps=round(ref_s / sim_s, 1),
                           largest_difference={"key": key, "relative": rel})
                line += f"  stepwise {ref_s:7.3f} s (x{ref_s / sim_s:5.1f}, max diff {rel:.2%} {key})"
            rows.append(row)
            print(line, flush=True)
    summary = summarise(args, rows)
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "levels": rows}, indent=2) + "\n")
    return 0


def summarise(args: argparse.Namespace, rows: list[dict[str, Any]]) -> dict[str, Any]:
    sim_s = sum(r["simulate_wall_s"] for r in rows)
    total = sim_s + sum(r["metrics_wall_s"] for r in rows)
    requests = sum(r["requests"] for r in rows)
    out: dict[str, Any] = {
        "sweep": args.sweep, "levels": len(rows), "requests": requests,
        "rejected": sum(r["rejected"] for r in rows),
        "output_tokens": sum(r["output_tokens"] for r in rows),
        "steps": sum(r["steps"] for r in rows), "repeat": args.repeat,
        "simulate_wall_s": round(sim_s, 2), "metrics_wall_s": round(total - sim_s, 2),
        "wall_seconds": round(total, 2), "cpu_seconds": round(sum(r["cpu_s"] for r in rows), 2),
        "requests_per_wall_s": round(requests / total, 1) if total else None,
        "target_wall_seconds": TARGET_S, "within_target": total < TARGET_S}
    if args.vs_steps and rows:
        ref = sum(r["stepwise_simulate_wall_s"] for r in rows)
        worst = max(rows, key=lambda r: r["largest_difference"]["relative"])
        out.update(stepwise_simulate_wall_s=round(ref, 2),
                   speedup_vs_steps=round(ref / sim_s, 1) if sim_s else None,
                   largest_difference={**worst["largest_difference"], "recipe": worst["recipe"],
                                       "workload": worst["workload"],
                                       "concurrency": worst["concurrency"]})
    return out


if __name__ == "__main__":
    sys.exit(main())
