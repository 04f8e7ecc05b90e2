#!/usr/bin/env python3
"""Benchmark the results pipeline over a year of nightly history: collect, report, dashboard.

    .venv/bin/python scripts/bench_results.py [--nights 365] [--jobs 38] [--workdir DIR] [--no-plots]

Generates ``--nights`` nightly runs of ``--jobs`` jobs × 8 levels (a job's speed drifts a little
night to night, one job in 50 fails its largest level), each night with two capacity searches
(two SLO tiers each) and two eval results: 365 nights give 113,150 records. It collects them
into a history store, then measures against the targets:

- collect of one more night into that store (incremental) < 10 s;
- report (load the store, write records, plots, frontiers, dashboard, summary) < 60 s;
- the dashboard's first page (index.html) < 5 MB, and interactive in headless Chromium < 2 s;
- filters (hardware, model, another run — whose chunk loads then) < 1 s.

Browser times are medians of repeated tries (printed with their spread). The browser step
needs Chromium (apt-get install -y chromium); without it, it is skipped. Exit status 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test-support code

from imx_support.headless import find_chromium, open_page  # noqa: E402
from imx_support.synthetic import matrix_jobs, write_capacity, write_eval, write_job  # noqa: E402

from infermatrix.evals.history import collect_evals  # noqa: E402
from infermatrix.evals.record import EvalRecord  # noqa: E402
from infermatrix.report import build_report  # noqa: E402
from infermatrix.results import collect  # noqa: E402
from infermatrix.results.store import Store  # noqa: E402

LEVELS = (1, 2, 4, 8, 16, 32, 64, 128)
FIRST_NIGHT = datetime(2025, 11, 23, 1, 17, tzinfo=UTC)
TARGETS = {"collect one more night": 10.0, "report": 60.0, "first page MB": 5.0,
           "interactive": 2.0, "filter": 1.0}
TRIES = 5


def night_id(n: int) -> str:
    return (FIRST_NIGHT + timedelta(days=n)).strftime("%Y%m%dT%H%M%SZ") + f"-n{n:05d}"


def write_night(results: Path, n: int, jobs: list) -> tuple[Path, int]:  # type: ignore[type-arg]
    """One nightly run folder; returns it and how many records it holds."""
    run_dir = results / night_id(n)
    records = 0
    for i, job in enumerate(jobs):
        drift = 1 + 0.02 * ((n * 7 + i * 13) % 11 - 5) / 5  # ±2 % night to night
        job = dataclasses.replace(job, speed=round(job.speed * drift, 4))
        failed = (LEVELS[-1],) if (i + n) % 50 == 0 else ()
        records += len(write_job(run_dir, job, failed_levels=failed, indent=None))
    for job in jobs[:2]:
        write_capacity(run_dir, job)
        write_eval(run_dir, job)
        records += 2 + 1  # a capacity record per SLO tier, one eval
    return run_dir, records


def collect_night(run_dirs: list[Path], store: Path) -> str:
    """What `infermatrix collect --store` does: levels and capacity results, then evals."""
    result = collect(run_dirs, store=store)
    evals = collect_evals(run_dirs)
    with Store(store) as db:
        db.save_evals(evals.records, evals.raw)
    return f"{result.summary.line()}; {len(result.agentic)} capacity records, {len(evals.records)} evals"


def _stage(label: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    value = fn(*args, **kwargs)
    dt = time.perf_counter() - t0
    print(f"{label:<52} {dt:8.2f} s", flush=True)
    return value, dt


def _median(label: str, times: list[float], target: float) -> bool:
    med = statistics.median(times)
    ok = med < target
    print(f"{label:<52} {med:8.3f} s  median of {len(times)} (min {min(times):.3f}, "
          f"max {max(times):.3f}); target < {target:g} s: {'met' if ok else 'MISSED'}")
    return ok


async def browse(index: Path, runs: list[str]) -> bool:
    """Load the page TRIES times (until drawn), then time filter changes on the chart."""
    loads, hardware, model, run = [], [], [], []
    async with open_page() as page:
        for _ in range(TRIES):
            t0 = time.perf_counter()
            await page.goto(index.as_uri(), timeout=120)
            await page.wait_for("document.body.dataset.ready === '1'", timeout=120)
            loads.append(time.perf_counter() - t0)
        points = await page.eval("Number(document.getElementById('chart').dataset.points)")
        await page.eval("imx.state.f.model = '__all__'; imx.state.f.workload = '__all__'; imx.render()")
        every = await page.eval("Number(document.getElementById('chart').dataset.points)")
        print(f"  first view {points:,} points, the latest run's {every:,} with every model")

        async def change(select: str, value: str) -> float:
            t0 = time.perf_counter()
            await page.eval(f"(() => {{ const s = document.getElementById('{select}'); "
                            f"s.value = {value!r}; s.dispatchEvent(new Event('change')); }})()")
            await page.wait_for("document.body.dataset.loading === '0'", timeout=60)
            await page.eval("document.getElementById('chart').dataset.points")
            return time.perf_counter() - t0

        hws = await page.eval("Array.from(document.getElementById('f-hardware').options).map(o => o.value)")
        models = await page.eval("Array.from(document.getElementById('f-model').options).map(o => o.value)")
        for i in range(TRIES):
            hardware.append(await change("f-hardware", hws[1 + i % (len(hws) - 1)]))
            model.append(await change("f-model", models[1 + i % (len(models) - 1)]))
            run.append(await change("f-run", runs[-2 - (7 * i) % (len(runs) - 1)]))  # an older night: its chunk loads
        if page.errors:
            raise RuntimeError(f"console errors: {page.errors}")
    ok = _median("dashboard: load until drawn (interactive)", loads, TARGETS["interactive"])
    ok &= _median("dashboard: filter by hardware", hardware, TARGETS["filter"])
    ok &= _median("dashboard: filter by model", model, TARGETS["filter"])
    ok &= _median("dashboard: another run (loads its chunk)", run, TARGETS["filter"])
    return ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nights", type=int, default=365)
    p.add_argument("--jobs", type=int, default=38, help="jobs a night, 8 levels each")
    p.add_argument("--workdir", type=Path, help="keep everything here (default: a temp dir, removed)")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib figures")
    p.add_argument("--reuse", action="store_true",
                   help="keep the --workdir's history from an earlier run (no generate, no first collect)")
    args = p.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="imx-bench-"))
    results, store, site = work / "results", work / "history.sqlite", work / "site"
    reuse = args.reuse and store.is_file()
    for path in (site,) if reuse else (results, site):
        shutil.rmtree(path, ignore_errors=True)
    if not reuse:
        store.unlink(missing_ok=True)
    jobs = matrix_jobs(args.jobs, levels=LEVELS)
    ok = True
    try:
        def generate() -> tuple[list[Path], int]:
            dirs, total = [], 0
            for n in range(args.nights):
                run_dir, count = write_night(results, n, jobs)
                dirs.append(run_dir)
                total += count
            return dirs, total

        if not reuse:
            (dirs, total), _ = _stage(f"generate {args.nights} nights", generate)
            print(f"  {total:,} records in {len(dirs)} runs")
            line, _ = _stage("collect the year → store (first time)", collect_night, dirs, store)
            print(f"  {line}")
        extra, _ = write_night(results, args.nights, jobs)
        line, dt = _stage("collect one more night → store (incremental)", collect_night, [extra], store)
        print(f"  {line}; target < {TARGETS['collect one more night']:g} s: "
              f"{'met' if dt < TARGETS['collect one more night'] else 'MISSED'}")
        ok &= dt < TARGETS["collect one more night"]

        def report() -> dict[str, Path]:  # as `infermatrix report STORE -o SITE`
            with Store(store) as db:
                records, raw, searches = db.records(), db.raw_all(), db.agentic()
                evals = len(db.evals(EvalRecord))
            print(f"  {len(records):,} levels, {len(searches):,} capacity records, {evals:,} evals")
            return build_report(records, site, raw=raw, agentic=searches, plots=not args.no_plots)

        outputs, dt = _stage("report" + (" (no plots)" if args.no_plots else ""), report)
        print(f"  target < {TARGETS['report']:g} s: {'met' if dt < TARGETS['report'] else 'MISSED'}")
        ok &= dt < TARGETS["report"]
        size = outputs["dashboard"].stat().st_size / 1e6
        chunks = sum(f.stat().st_size for f in (site / "dashboard-data").glob("*.js")) / 1e6
        print(f"{'dashboard: first page (index.html)':<52} {size:8.2f} MB; target < "
              f"{TARGETS['first page MB']:g} MB: {'met' if size < TARGETS['first page MB'] else 'MISSED'}"
              f"  (chunks loaded on demand: {chunks:.1f} MB)")
        ok &= size < TARGETS["first page MB"]
        if find_chromium() is None:
            print("dashboard: no Chromium found, browser check skipped (apt-get install -y chromium)")
        else:
            ok &= asyncio.run(browse(outputs["dashboard"], [night_id(n) for n in range(args.nights + 1)]))
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
