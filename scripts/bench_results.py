#!/usr/bin/env python3
"""Benchmark the results pipeline at scale: 20,000 raw result files → collect → report → dashboard.

    .venv/bin/python scripts/bench_results.py [--files 20000] [--workdir DIR] [--no-plots]

Prints the time of each stage and checks the targets: collect < 30 s, and the dashboard loads
and stays interactive (a filter re-renders well under a second) with every point shown. The
browser step needs Chromium (apt-get install -y chromium); without it, it is skipped.
Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from infermatrix.report import build_report
from infermatrix.report.headless import find_chromium, open_page
from infermatrix.results import collect
from infermatrix.results.store import Store
from infermatrix.results.synthetic import matrix_jobs, write_job

LEVELS = (1, 2, 4, 8, 16, 32, 64, 128)
COLLECT_TARGET_S = 30.0
RENDER_TARGET_MS = 1000.0


def _timed(label: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    value = fn(*args, **kwargs)
    dt = time.perf_counter() - t0
    print(f"{label:<44} {dt:8.2f} s", flush=True)
    return value, dt


def generate(run_dir: Path, files: int) -> int:
    jobs = matrix_jobs(-(-files // len(LEVELS)), levels=LEVELS)
    written = 0
    for i, job in enumerate(jobs):
        # every 50th job fails its largest level, like a real night
        written += len(write_job(run_dir, job, failed_levels=(LEVELS[-1],) if i % 50 == 0 else (),
                                 indent=None))
    return written


async def browse(index: Path, expected: int) -> dict[str, float]:
    async with open_page() as page:
        t0 = time.perf_counter()
        await page.goto(index.as_uri(), timeout=120)
        await page.wait_for("document.body.dataset.ready === '1'", timeout=120)
        load_s = time.perf_counter() - t0
        show_all = ("(() => { const t = performance.now(); for (const k of ['model', 'workload']) "
                    "{ imx.state.f[k] = '__all__'; } imx.render(); return performance.now() - t; })()")
        all_ms = await page.eval(show_all)
        points = int(await page.eval("document.getElementById('chart').dataset.points"))
        filt = ("(() => { const t = performance.now(); const s = document.getElementById('f-hardware');"
                " s.value = s.options[1].value; s.dispatchEvent(new Event('change'));"
                " return performance.now() - t; })()")
        filter_ms = await page.eval(filt)
        filtered = int(await page.eval("document.getElementById('chart').dataset.points"))
        table_ms = await page.eval("(() => { const t = performance.now(); "
                                   "document.querySelector('nav button[data-view=table]').click(); "
                                   "return performance.now() - t; })()")
        if page.errors:
            raise RuntimeError(f"console errors: {page.errors}")
        print(f"{'dashboard: load until interactive':<44} {load_s:8.2f} s")
        print(f"{'dashboard: render all points':<44} {all_ms / 1000:8.2f} s  ({points:,} points)")
        print(f"{'dashboard: filter by hardware':<44} {filter_ms / 1000:8.2f} s  ({filtered:,} points)")
        print(f"{'dashboard: table view (sorted, paged)':<44} {table_ms / 1000:8.2f} s")
        if points != expected:
            raise RuntimeError(f"chart shows {points} points, expected {expected}")
        return {"load_s": load_s, "render_ms": all_ms, "filter_ms": filter_ms, "table_ms": table_ms}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=20_000)
    p.add_argument("--workdir", type=Path, help="keep everything here (default: a temp dir, removed)")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib figures")
    args = p.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="imx-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    ok = True
    try:
        run_dir = work / "results" / "20261122T011700Z-bench0"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        n, _ = _timed(f"generate {args.files:,} raw result files", generate, run_dir, args.files)
        store = work / "history.sqlite"
        store.unlink(missing_ok=True)
        result, collect_s = _timed("collect → store (first time)", collect, [run_dir], store)
        print(f"  {result.summary.line()}")
        again, _ = _timed("collect → store (again: idempotent)", collect, [run_dir], store)
        print(f"  {again.summary.line()}")
        ok &= collect_s < COLLECT_TARGET_S and result.summary.records == n
        print(f"  target collect < {COLLECT_TARGET_S:.0f} s: {'met' if collect_s < COLLECT_TARGET_S else 'MISSED'}")

        def from_store():  # type: ignore[no-untyped-def]
            with Store(store) as db:
                return db.records(), db.raw_all()

        (records, raw), _ = _timed("load records + raw from the store", from_store)
        site = work / "site"
        outputs, _ = _timed("report (records, frontiers, dashboard, summary" + (")" if args.no_plots else ", plots)"),
                            build_report, records, site, raw=raw, plots=not args.no_plots)
        size = outputs["dashboard"].stat().st_size
        print(f"  index.html {size / 1e6:.1f} MB, {len(json.loads(json.dumps(outputs, default=str)))} outputs")
        if find_chromium() is None:
            print("dashboard: no Chromium found, browser check skipped (apt-get install -y chromium)")
        else:
            expected = sum(r.ok and r.output_tput_per_gpu is not None and r.interactivity is not None
                           for r in records)
            times = asyncio.run(browse(outputs["dashboard"], expected))
            interactive = times["filter_ms"] < RENDER_TARGET_MS and times["render_ms"] < RENDER_TARGET_MS
            print(f"  target filter/render < {RENDER_TARGET_MS:.0f} ms: {'met' if interactive else 'MISSED'}")
            ok &= interactive
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
