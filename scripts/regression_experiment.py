#!/usr/bin/env python3
"""Does the regression gate flap, and does it catch a real slowdown? (issue 30)

Simulates a sequence of nightly runs of a subset of the nightly sweep in virtual time
(``run_in_virtual_time``, the same result files a nightly writes), each night on a "machine" a
little faster or slower than the night before (``INFERMATRIX_SIM_NIGHT_NOISE``: a seeded
factor per recipe and night, log-normal with ``--sigma``), and collects them into a history
store as collect.yml does. Then, for each of ``--pairs`` consecutive nights, it runs the gate
CI runs — ``infermatrix compare STORE NEW --base-run PREVIOUS --fail-on-regression 0`` — twice:

- **identical**: NEW is the next night as simulated (same catalog, same code): any regression
  flagged is a false alarm;
- **slowed**: NEW is the same night with one configuration's engine steps ``1 / (1 −
  slowdown)`` times as long (``INFERMATRIX_SIM_STEP_SCALE``: throughput ``slowdown`` lower):
  the gate should flag it.

Prints the counts (and the smallest change each metric could show at these sizes) as
markdown for docs/results.md. ``--pairs 20`` takes a few minutes on two cores; tests run a
few pairs (tests/results/test_regression_experiment.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from infermatrix.catalog.loader import Catalog, load_catalog
from infermatrix.commands.results import compare_main
from infermatrix.launch.loop import run_in_virtual_time
from infermatrix.launch.virtual_pool import LevelPool
from infermatrix.plan.jobs import Filters, Job, plan_sweep
from infermatrix.results.collect import collect
from infermatrix.results.regression import DEFAULT_LOOKBACK, DEFAULT_Z
from infermatrix.results.store import Store
from infermatrix.sim.variation import NOISE_VAR, SCALE_VAR

RECIPES = ("llama-3.1-70b-instruct/h200-vllm-fp8", "llama-3.1-70b-instruct/mi300x-vllm-fp8",
           "deepseek-r1-0528/h200-sglang-fp8", "deepseek-r1-0528/b200-sglang-fp8")
SLOWED = "llama-3.1-70b-instruct/h200-vllm-fp8"
WORKLOAD = "fixed-1k-1k"
FIRST_NIGHT = datetime(2026, 10, 1, 1, 0, tzinfo=UTC)


@dataclass
class Outcome:
    flagged: int = 0  # comparisons whose gate failed
    regressions: int = 0  # configurations flagged, in all comparisons
    slowed_caught: int = 0  # comparisons that flagged the slowed configuration
    other_flagged: int = 0  # regressions flagged in configurations nothing changed in
    seconds: list[float] = field(default_factory=list)


def run_id(night: int, tag: str = "") -> str:
    return (FIRST_NIGHT + timedelta(days=night)).strftime("%Y%m%dT%H%M%SZ") + f"-n{night:03d}{tag}"


def simulate_night(cat: Catalog, jobs: list[Job], out: Path, rid: str, env: dict[str, str],
                   workers: int) -> Path:
    """One night's results in virtual time, every level measured under ``env``'s knobs."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # forked workers inherit it, as the simulator reads it per level
    try:
        pool = LevelPool(cat, jobs, workers) if workers > 1 else None
        try:
            for job in jobs:
                run_in_virtual_time(cat, job, out, rid, log=lambda _m: None, pool=pool)
        finally:
            if pool is not None:
                pool.close()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return out


def gate(store: Path, new: Path, base_run: str, z: float, lookback: int) -> tuple[int, str]:
    """``infermatrix compare`` as CI runs it: (exit code, its markdown)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
        code = compare_main([str(store), str(new), "--base-run", base_run, "--z", str(z),
                             "--lookback", str(lookback), "--fail-on-regression", "0"])
    return code, text.getvalue()


def flagged_recipes(markdown: str) -> list[str]:
    return re.findall(r"^\| \*\*regression\*\* \| ([^|]+?) \|", markdown, flags=re.M)


def tally(outcome: Outcome, code: int, markdown: str, slowed: str | None) -> None:
    recipes = flagged_recipes(markdown)
    outcome.flagged += code == 1
    outcome.regressions += len(recipes)
    outcome.slowed_caught += slowed is not None and slowed in recipes
    outcome.other_flagged += sum(r != slowed for r in recipes)


def smallest_detectable(store: Path, z: float) -> dict[str, float]:
    """Per headline metric, the median over configurations of the smallest change the rule
    can call: max(z × the levels' combined bootstrap spread, z × √2 × the nights' spread)."""
    from infermatrix.results.compare import HEADLINE
    from infermatrix.results.regression import night_sigma
    from infermatrix.results.uncertainty import relative_sigma

    with Store(store) as db:
        records = db.records()
    per_key: dict[tuple, list] = {}
    for r in records:
        per_key.setdefault(r.natural_key, []).append(r)
    out = {}
    for metric, _ in HEADLINE:
        bands = []
        for recs in per_key.values():
            last = recs[-1]
            level = relative_sigma(last.metric(metric), last.ci95.get(metric))
            nights = night_sigma([x.metric(metric) for x in recs[-DEFAULT_LOOKBACK:]])
            if level is None or nights is None:
                continue
            bands.append(max(z * level * 2 ** 0.5, z * 2 ** 0.5 * nights))
        if bands:
            out[metric] = statistics.median(bands)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--history", type=int, default=5,
                   help="nights in the store before the first pair (default 5)")
    p.add_argument("--sigma", type=float, default=0.01,
                   help="night-to-night spread of the simulated machines (default 0.01: 1%%)")
    p.add_argument("--slowdown", type=float, default=0.10, help="throughput lost (default 0.10)")
    p.add_argument("--recipe", action="append", help=f"recipes (default: {', '.join(RECIPES)})")
    p.add_argument("--slowed", default=SLOWED, help=f"the slowed recipe (default {SLOWED})")
    p.add_argument("--workload", default=WORKLOAD)
    p.add_argument("--concurrency", type=int, nargs="+", help="levels (default: the nightly's)")
    p.add_argument("--z", type=float, default=DEFAULT_Z)
    p.add_argument("--lookback", type=int, default=DEFAULT_LOOKBACK)
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    p.add_argument("--out", type=Path, help="keep the runs and the store here")
    p.add_argument("--root", type=Path)
    args = p.parse_args(argv)

    cat = load_catalog(args.root)
    recipes = args.recipe or list(RECIPES)
    jobs = plan_sweep(cat, "nightly", Filters(recipe=recipes, workload=[args.workload]))
    if args.concurrency:
        jobs = [j.model_copy(update={"concurrency": [c for c in j.concurrency
                                                     if c in args.concurrency]}) for j in jobs]
        jobs = [j for j in jobs if j.concurrency]
    levels = sum(len(j.concurrency) for j in jobs)
    with tempfile.TemporaryDirectory(prefix="imx-regression-") as tmp:
        root = args.out or Path(tmp)
        store = root / "history.sqlite"
        runs = root / "runs"
        nights = args.history + args.pairs + 1
        print(f"{len(jobs)} jobs, {levels} levels a night ({', '.join(recipes)} × "
              f"{args.workload}); {nights} nights + {args.pairs} slowed; night-to-night "
              f"spread {args.sigma:.1%}; slowed: {args.slowed} by {args.slowdown:.0%}",
              file=sys.stderr)
        t0 = time.perf_counter()
        for night in range(nights):
            rid = run_id(night)
            simulate_night(cat, jobs, runs / rid, rid, {NOISE_VAR: f"{args.sigma}@{night}"},
                           args.workers)
            collect([runs / rid], store=store)
        slow = {SCALE_VAR: f"{args.slowed}={1 / (1 - args.slowdown)}"}
        identical, slowed = Outcome(), Outcome()
        for i in range(args.pairs):
            base, new = run_id(args.history + i), args.history + i + 1
            code, text = gate(store, runs / run_id(new), base, args.z, args.lookback)
            tally(identical, code, text, None)
            rid = run_id(new, "-slow")
            simulate_night(cat, jobs, runs / rid, rid,
                           {NOISE_VAR: f"{args.sigma}@{new}", **slow}, args.workers)
            code, text = gate(store, runs / rid, base, args.z, args.lookback)
            tally(slowed, code, text, args.slowed)
        detectable = smallest_detectable(store, args.z)
        took = time.perf_counter() - t0
    print(f"| comparisons | gate failed | regressions flagged | slowed configuration caught | "
          f"flagged elsewhere |\n|---|---|---|---|---|\n"
          f"| {args.pairs} identical pairs | {identical.flagged} | {identical.regressions} | – | "
          f"{identical.other_flagged} |\n"
          f"| {args.pairs} pairs, {args.slowed} {args.slowdown:.0%} slower | {slowed.flagged} | "
          f"{slowed.regressions} | {slowed.slowed_caught} of {args.pairs} | "
          f"{slowed.other_flagged} |")
    print("\nSmallest change the rule calls (median over configurations, z = "
          f"{args.z:g}): " + ", ".join(f"{m} {v:.1%}" for m, v in detectable.items()))
    print(f"\n{nights + args.pairs} nights of {levels} levels simulated and compared in "
          f"{took:.0f} s")
    print(f"RESULT identical_flagged={identical.regressions} slowed_caught={slowed.slowed_caught} "
          f"pairs={args.pairs} other_flagged={slowed.other_flagged + identical.other_flagged}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
