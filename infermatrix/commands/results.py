"""`infermatrix collect`, `report` and `compare`: each takes the argv after its subcommand and
returns an exit code. A mistake is one line on stderr and exit 2, never a traceback.

The CLI layer wires ``results`` (records, the store), ``evals`` (eval records, the accuracy gate)
and ``report`` together here; those packages do not import each other.
"""

from __future__ import annotations

import argparse
import math
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import NoReturn

from ..argtypes import bounded_int
from ..errors import UsageError
from ..evals.compare import accuracy_section
from ..evals.history import collect_evals
from ..evals.publish import apply_gate, collect_note, current_accuracy
from ..evals.record import EvalRecord
from ..markup import safe_href
from ..report import build_report
from ..report.build import default_catalog
from ..report.dashboard import launch_from_catalog, read_catalog_json
from ..results.agentic import AgenticRecord
from ..results.collect import collect
from ..results.compare import DEFAULT_NOISE, HEADLINE, compare, failures, markdown
from ..results.compare_agentic import agentic_markdown, agentic_regressions, compare_agentic
from ..results.export import write_records_csv, write_records_jsonl
from ..results.failures import JobFailure, not_superseded
from ..results.failures import select as select_failures
from ..results.records import Record, order_runs, run_order
from ..results.regression import (
    DEFAULT_LOOKBACK,
    DEFAULT_Z,
    MIN_NIGHTS,
    Rule,
    history_runs,
    night_history,
)
from ..results.sources import check_exists, load, load_one, select_agentic, select_runs
from ..results.store import Store, is_store

MAX_REASONS = 20


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _run(prog: str, parser: argparse.ArgumentParser, argv: Sequence[str],
         body: Callable[[argparse.Namespace], int]) -> int:
    try:
        return body(parser.parse_args(list(argv)))
    except (UsageError, OSError, sqlite3.Error) as exc:  # --help still exits, as argparse does
        if isinstance(exc, OSError) and exc.strerror:
            exc = UsageError(f"{exc.filename or ''}: {exc.strerror}".lstrip(": "))
        print(f"infermatrix {prog}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def _check_store(path: Path | None) -> None:
    if path is None or not path.exists():
        return
    if path.is_dir() or (path.stat().st_size and not is_store(path)):
        raise UsageError(f"{path}: not an SQLite history store")


def evals_from(paths: Sequence[Path], runs: set[str] | None = None) -> list[EvalRecord]:
    """Eval records from what report and compare accept: run folders, eval files and history
    stores (records .jsonl files hold none); only those of ``runs`` when given."""
    out: list[EvalRecord] = []
    for path in map(Path, paths):
        if path.is_dir() or (path.name.startswith("eval-") and path.suffix == ".json"):
            out += collect_evals([path]).records
        elif is_store(path):
            with Store(path) as db:
                out += db.evals(EvalRecord)
    return [e for e in out if runs is None or e.run_id in runs]


# ---------------------------------------------------------------- collect


def collect_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="infermatrix collect", description="Normalise raw level results into records "
                "and keep them, the capacity results of capacity documents and the eval records "
                "in the history store (docs/results.md).")
    p.add_argument("paths", nargs="+", type=Path, metavar="DIR", help="run directories or files")
    p.add_argument("--store", type=Path, help="history store (SQLite) to add the records to")
    p.add_argument("--jsonl", type=Path, help="write the records as JSONL here")
    p.add_argument("--csv", type=Path, help="write the records as CSV here")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a file was skipped or missing")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line on stdout")
    return p


def _kinds_line(agentic: Sequence[AgenticRecord], evals: int, stored: dict[str, str]) -> str:
    """The capacity and eval records found (and what the store did with them)."""
    runs = {(a.run_id, a.recipe, a.workload) for a in agentic}
    parts = [f"{len(agentic)} capacity results ({len(runs)} searches)", f"{evals} evals"]
    return "; ".join(p + (f" (store: {stored[k]})" if k in stored else "")
                     for p, k in zip(parts, ("agentic", "evals"), strict=True))


def check_outputs_outside(inputs: Sequence[Path], outputs: dict[str, Path | None]) -> None:
    """An export written inside a run it reads could overwrite a measured level file (or be
    read back as one by the next collect): refused, as is any output that is an input."""
    sources = [p.resolve() for p in inputs]
    for flag, out in outputs.items():
        if out is None:
            continue
        target = out.resolve()
        for src in sources:
            if target == src or (src.is_dir() and target.is_relative_to(src)):
                raise UsageError(f"{flag} {out}: inside the input {src}; write it outside the runs "
                                 "collect reads")


def _collect(args: argparse.Namespace) -> int:
    check_exists(args.paths)
    check_outputs_outside(args.paths, {"--jsonl": args.jsonl, "--csv": args.csv})
    _check_store(args.store)
    result = collect(args.paths, store=args.store)
    s = result.summary
    evals = collect_evals(args.paths)
    stored: dict[str, str] = {}
    if args.store is not None:
        with Store(args.store) as db:
            stored["evals"] = db.save_evals(evals.records, evals.raw).text()
        if result.agentic_stored is not None:
            stored["agentic"] = result.agentic_stored.text()
    marked, note = collect_note(args.paths, result.records, evals.records)
    if args.jsonl:
        write_records_jsonl(marked, args.jsonl)
    if args.csv:
        write_records_csv(marked, args.csv)
    unfinished = s.interrupted_jobs + s.missing_jobs
    problems = s.skipped + s.missing + unfinished
    if problems:
        jobs = f", {unfinished} jobs interrupted or never started" if unfinished else ""
        print(f"warning: {problems - unfinished} files skipped or missing{jobs}:", file=sys.stderr)
        for path, reason in s.problems[:MAX_REASONS]:
            print(f"  {path}: {reason}", file=sys.stderr)
        if len(s.problems) > MAX_REASONS:
            print(f"  … and {len(s.problems) - MAX_REASONS} more", file=sys.stderr)
    if not args.quiet:
        print(f"collect: {s.line()}")
        if result.agentic or evals.records:
            print(f"collect: {_kinds_line(result.agentic, len(evals.records), stored)}")
        if result.failures:
            stored_text = (f" (store: {result.failures_stored.text()})"
                           if result.failures_stored is not None else "")
            print(f"collect: {len(result.failures)} failed jobs{stored_text}")
        if note:
            print(note)
    return 1 if args.strict and problems else 0


def collect_main(argv: Sequence[str]) -> int:
    return _run("collect", collect_parser(), argv, _collect)


# ---------------------------------------------------------------- report


def report_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="infermatrix report", description="Plots, dashboard and job summary from run "
                "directories, history stores or records JSONL (docs/dashboard.md).")
    p.add_argument("inputs", nargs="+", type=Path, metavar="RUN|STORE|JSONL")
    p.add_argument("-o", "--output", type=Path, metavar="DIR",
                   help="where to write (default, for one input: a run directory itself, as "
                        "`infermatrix sweep` does, or the folder holding the store or JSONL)")
    p.add_argument("--run", action="append", metavar="RUN_ID", help="only this run (repeatable)")
    p.add_argument("--last", type=bounded_int(1, 10**6), metavar="N", help="only the last N runs")
    p.add_argument("--title", default="infermatrix results")
    p.add_argument("--no-plots", action="store_true", help="skip the matplotlib figures")
    p.add_argument("--catalog", default="catalog.html", metavar="URL", type=catalog_link,
                   help="recipe links: URL#<recipe-id>, or a template with {id} or {anchor} "
                   "(default: catalog.html, written beside the dashboard)")
    p.add_argument("--catalog-json", type=Path, metavar="FILE",
                   help="`infermatrix catalog --json` output: the launch commands to show "
                   "(default: this checkout's catalog)")
    p.add_argument("--summary", type=Path, metavar="FILE",
                   help="append summary.md here (default: $GITHUB_STEP_SUMMARY when set)")
    return p


def default_output(inputs: Sequence[Path]) -> Path:
    """`report RUN` writes beside the run's results, as `sweep` does; `report STORE` beside
    the store. Several inputs have no obvious home: then -o is needed."""
    if len(inputs) != 1:
        raise UsageError("-o DIR is needed with several inputs")
    return inputs[0] if inputs[0].is_dir() else inputs[0].parent


def catalog_link(url: str) -> str:
    """--catalog: a link the dashboard writes into every recipe's href, so http(s) or relative
    only (a javascript: URL would run in the reader's browser)."""
    if safe_href(url) is None:
        raise argparse.ArgumentTypeError(f"not an http(s) or relative URL: {url[:80]!r}")
    return url


def _report(args: argparse.Namespace) -> int:
    check_exists(args.inputs)
    args.output = args.output or default_output(args.inputs)
    from ..launch.bench_commands import recipe_benchmarks  # the client: only when reporting

    catalog = (read_catalog_json(args.catalog_json) if args.catalog_json
               else default_catalog(benchmarks_of=lambda cat: partial(recipe_benchmarks, cat)))
    loaded = load(args.inputs)
    records = select_runs(loaded.records, args.run, args.last,
                          known={a.run_id for a in loaded.agentic} | {f.run_id for f in loaded.failures})
    searches = select_agentic(loaded.agentic, args.run, args.last)
    broken = failures_of(loaded.failures, records, args.run, args.last)
    marked, gate_md = apply_gate(records, evals_from(args.inputs), current_accuracy())
    outputs = build_report(marked, args.output, raw=loaded.raw, collect_summary=loaded.summary,
                           title=args.title, catalog=args.catalog, catalog_data=catalog,
                           launch=launch_from_catalog(catalog),
                           plots=not args.no_plots, agentic=searches, accuracy_md=gate_md,
                           failures=broken)
    summary = outputs["summary"]
    target = args.summary or (Path(os.environ["GITHUB_STEP_SUMMARY"])
                              if os.environ.get("GITHUB_STEP_SUMMARY") else None)
    if target is not None:
        with target.open("a", encoding="utf-8") as fh:
            fh.write(summary.read_text(encoding="utf-8"))
    searched = f", {len(searches)} agentic capacity records" if searches else ""
    failed = f", {len(broken)} failed jobs" if broken else ""
    print(f"report: {len(marked)} levels from {len(run_order(marked))} runs{searched}{failed} -> "
          f"{args.output}")
    for name, path in outputs.items():
        print(f"  {name}: {path}")
    return 0


def failures_of(failures: Sequence[JobFailure], records: Sequence[Record],
                runs: Sequence[str] | None, last: int | None) -> list[JobFailure]:
    """The failure records of the runs a report shows (those named, else of the last N runs,
    levels' and failures' runs together, else all) that no later run measured past."""
    if runs:
        failures = select_failures(failures, runs)
    elif last is not None:
        order = order_runs([(r.run_id, r.started_at) for r in records]
                           + [(f.run_id, f.failed_at) for f in failures])
        failures = select_failures(failures, order[-last:])
    return not_superseded(failures, records)


def report_main(argv: Sequence[str]) -> int:
    return _run("report", report_parser(), argv, _report)


# ---------------------------------------------------------------- compare


def compare_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="infermatrix compare", description="Compare two runs configuration by "
                "configuration; markdown on stdout (docs/results.md).")
    p.add_argument("base", type=Path, metavar="BASE", help="run directory, store or records JSONL")
    p.add_argument("new", type=Path, metavar="NEW", help="run directory, store or records JSONL")
    p.add_argument("--base-run", metavar="RUN_ID", help="the run of BASE to compare")
    p.add_argument("--new-run", metavar="RUN_ID", help="the run of NEW to compare")
    p.add_argument("--noise", type=_amount("--noise"), default=DEFAULT_NOISE * 100,
                   metavar="PCT", help="the night-to-night band of a configuration with fewer "
                   f"than {MIN_NIGHTS} runs of history (default 3); SLO tiers' agents within "
                   "± PCT %% are 'same'")
    p.add_argument("--z", type=_amount("--z"), default=DEFAULT_Z, metavar="Z",
                   help="a change is a regression only beyond Z × both the levels' own "
                        "bootstrap spread and the night-to-night spread (default %(default)g)")
    p.add_argument("--lookback", type=int, default=DEFAULT_LOOKBACK, metavar="N",
                   help="the night-to-night spread comes from BASE's last N runs (a history "
                        "store, or a folder or JSONL of several runs; default %(default)s)")
    p.add_argument("--fail-on-regression", type=_amount("--fail-on-regression"), metavar="PCT",
                   help="exit 1 when a regression (beyond the noise, as --z says) is worse by "
                        "more than PCT %% (0: any), a level that passed now fails, an SLO tier "
                        "holds fewer agents by more than PCT %% or an accuracy evaluation that "
                        "passed now fails")
    return p


def _amount(flag: str) -> Callable[[str], float]:
    """An argparse type: a finite number ≥ 0 (nan would silently disable a gate)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"{flag}: {text!r} is not a finite number ≥ 0")
        return value

    return parse


@dataclass
class _Side:
    records: list[Record]
    agentic: list[AgenticRecord]
    failures: list[JobFailure]

    def runs(self) -> set[str]:
        return ({r.run_id for r in self.records} | {a.run_id for a in self.agentic}
                | {f.run_id for f in self.failures})


def _side(path: Path, run: str | None, exclude: _Side | None = None) -> _Side:
    """One side: the chosen run, or for a store the latest run not on the other side
    (throughput and capacity each their own latest), or everything a folder or file holds."""
    if run is not None:
        loaded = load_one(path)
        known = {a.run_id for a in loaded.agentic} | {f.run_id for f in loaded.failures}
        return _Side(select_runs(loaded.records, [run], known=known),
                     select_agentic(loaded.agentic, [run]), select_failures(loaded.failures, [run]))
    if path.is_file() and is_store(path):
        with Store(path) as db:
            runs = [r for r in db.runs() if exclude is None or r not in exclude.runs()]
            searched = sorted({a.run_id for a in db.agentic()}
                              - (exclude.runs() if exclude else set()))
            return _Side(db.records(runs[-1:]) if runs else [],
                         db.agentic(searched[-1:]) if searched else [],
                         db.failures(runs[-1:]) if runs else [])
    loaded = load_one(path)
    return _Side(loaded.records, loaded.agentic, loaded.failures)


def _history(path: Path, base: _Side, new: _Side, lookback: int) -> list[Record]:
    """BASE's runs up to the one compared (never NEW's): the last ``lookback`` of them, whose
    night-to-night spread the regression rule weighs a change against."""
    if not base.records:
        return []
    last, exclude = run_order(base.records)[-1], new.runs()
    if path.is_file() and is_store(path):
        with Store(path) as db:
            return db.records(history_runs(db.runs(), last, exclude, lookback))
    loaded = load_one(path).records
    keep = set(history_runs(run_order(loaded), last, exclude, lookback))
    return [r for r in loaded if r.run_id in keep]


def _compare(args: argparse.Namespace) -> int:
    check_exists([args.base, args.new])
    if args.lookback < 1:
        raise UsageError(f"--lookback: at least 1 run, not {args.lookback}")
    new = _side(args.new, args.new_run)
    base = _side(args.base, args.base_run, new)
    noise = args.noise / 100
    rule = Rule(noise=noise, z=args.z,
                nights=night_history(_history(args.base, base, new, args.lookback),
                                     args.lookback, [m for m, _ in HEADLINE]))
    rows = compare(base.records, new.records, noise, base.failures, new.failures, rule=rule)
    capacity = compare_agentic(base.agentic, new.agentic, noise)
    text, acc_regressions = accuracy_section(evals_from([args.base], base.runs()),
                                             evals_from([args.new], new.runs()),
                                             current_accuracy())
    print(markdown(rows, base.records, new.records, noise, rule, args.lookback)
          + agentic_markdown(capacity) + text, end="")
    if args.fail_on_regression is None:
        return 0
    bad = failures(rows, args.fail_on_regression / 100)
    fewer = agentic_regressions(capacity, args.fail_on_regression / 100)
    if bad or fewer or acc_regressions:
        print(f"infermatrix compare: {len(bad)} configurations now failing or worse beyond "
              f"the noise by more than {args.fail_on_regression:g}%, {len(fewer)} SLO tiers with fewer "
              f"agents, {acc_regressions} accuracy regressions", file=sys.stderr)
        return 1
    return 0


def compare_main(argv: Sequence[str]) -> int:
    return _run("compare", compare_parser(), argv, _compare)
