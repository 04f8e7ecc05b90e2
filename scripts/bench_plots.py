#!/usr/bin/env python3
"""The report's figures drawn in one process and in worker processes, side by side.

    .venv/bin/python scripts/bench_plots.py RECORDS.jsonl [--repeats 3] [--workers N]

RECORDS.jsonl: a run's records (e.g. results/<run>/records.jsonl from `infermatrix sweep
nightly --virtual`). Alternates the two ways ``--repeats`` times and prints each wall time,
the medians and their ratio (the machine is shared: the median of alternating runs is the
figure to quote).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from infermatrix.cpus import usable_cpus
from infermatrix.report.plots import write_plots
from infermatrix.results.export import read_records_jsonl


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=usable_cpus())
    args = parser.parse_args()
    records = read_records_jsonl(args.records)
    times: dict[int, list[float]] = {1: [], args.workers: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            for workers in times:
                t0 = time.perf_counter()
                written = write_plots(records, Path(tmp) / f"{i}-{workers}", workers=workers)
                times[workers].append(time.perf_counter() - t0)
                print(f"run {i + 1}: {workers} process(es): {times[workers][-1]:6.2f} s "
                      f"({len(written)} files)", flush=True)
    one, many = (statistics.median(times[w]) for w in times)
    print(f"median: 1 process {one:.2f} s, {args.workers} processes {many:.2f} s, "
          f"ratio {one / many:.2f}x ({len(records)} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
