#!/usr/bin/env python3
"""Benchmark the planner: build a synthetic catalog that expands to 10,000 jobs, time catalog
load + plan + the workflow hand-off (the plan files of every shard and the outputs sweep.yml's
plan job writes, then one shard read back as job.yml's matrix).

Usage: python scripts/bench_plan.py [--recipes 250] [--fleets 10] [--repeats 5]
Jobs = recipes × 4 workloads × fleets. Prints the median of the repeats (target: < 3 s).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from infermatrix.catalog.loader import load_catalog  # noqa: E402
from infermatrix.plan.github import (  # noqa: E402
    SHARD_FILE,
    matrix_outputs,
    output_bytes,
    write_github_outputs,
    write_plan,
)
from infermatrix.plan.jobs import plan_sweep  # noqa: E402
from infermatrix.plan.planfile import read_plan_file  # noqa: E402

RECIPE = """\
model: deepseek-r1-0528
hardware: H200
engine: {{name: sglang, version: "0.5.{i}", image: "lmsysorg/sglang:v0.5.{i}"}}
precision: fp8
topology:
  pools:
    - parallel: {{tp: 8}}
      args: {{max-running-requests: {i}, chunked-prefill-size: 8192}}
source: {{document: synthetic, submitted_by: bench}}
"""


def build(root: Path, recipes: int, fleets: int) -> None:
    for part in ("matrix", "runners"):
        shutil.copytree(REPO / part, root / part)
    for sweep in (root / "matrix" / "sweeps").glob("*.yaml"):
        sweep.unlink()
    out = root / "benchmarks" / "synthetic"
    out.mkdir(parents=True)
    for i in range(recipes):
        (out / f"h200-sglang-{i:04d}.yaml").write_text(RECIPE.format(i=i + 1))
    with (root / "runners" / "fleets.yaml").open("a") as fh:
        for i in range(fleets):
            fh.write(f"\nsynthetic-{i}:\n  hardware: H200\n  kind: docker\n  gpus_per_node: 8\n")
    (root / "matrix" / "sweeps" / "big.yaml").write_text(
        "entries:\n  - recipes: ['synthetic/*']\n"
        "    workloads: [smoke-1k-128, fixed-1k-1k, fixed-1k-8k, fixed-8k-1k]\n"
        "    concurrency: [4, 8, 16, 32, 64]\n    runners: ['synthetic-*']\n".replace(
            "'synthetic-*'", ", ".join(f"synthetic-{i}" for i in range(fleets)))
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--recipes", type=int, default=250)
    ap.add_argument("--fleets", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, args.recipes, args.fleets)
        load_s, plan_s, shard_s, select_s, cpu_s = [], [], [], [], []
        for _ in range(args.repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            cat = load_catalog(root)
            t1 = time.perf_counter()
            jobs = plan_sweep(cat, "big")
            t2 = time.perf_counter()
            outputs = write_plan(jobs, root / "plan")
            write_github_outputs(outputs, root / "github_output")
            c3, t3 = time.process_time(), time.perf_counter()
            matrix = matrix_outputs(read_plan_file(root / "plan" / SHARD_FILE.format(0)))
            t4 = time.perf_counter()
            load_s.append(t1 - t0)
            plan_s.append(t2 - t1)
            shard_s.append(t3 - t2)
            select_s.append(t4 - t3)
            cpu_s.append(c3 - c0)
        total = [a + b + c for a, b, c in zip(load_s, plan_s, shard_s, strict=True)]
        files = sorted((root / "plan").iterdir())
        print(f"jobs planned:        {len(jobs)} in {outputs['shard_count']} shards")
        print(f"catalog load (med):  {statistics.median(load_s):.3f} s  ({args.recipes} recipes)")
        print(f"plan (median):       {statistics.median(plan_s):.3f} s")
        print(f"hand-off (median):   {statistics.median(shard_s):.3f} s  (plan files: "
              f"{sum(f.stat().st_size for f in files):,} bytes; outputs: "
              f"{sum(output_bytes(v) for v in outputs.values()):,} bytes)")
        print(f"total (median):      {statistics.median(total):.3f} s  (target < 3 s; CPU time "
              f"{statistics.median(cpu_s):.3f} s: waiting for a busy machine's cores not counted)")
        print(f"one shard's matrix:  {statistics.median(select_s):.3f} s  (job.yml's select job; "
              f"{output_bytes(matrix['jobs']):,} of GitHub's 1,000,000 output bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
