"""`infermatrix` command line: one subcommand per pipeline stage.

Stages that parse their own arguments (bench, sim, catalog, collect, report, compare, capacity)
get the rest of the command line untouched, so they work the same when called as ``python -m``
or from Python. This module and ``infermatrix/commands/`` (the subcommands that join several
packages) are the CLI layer; the packages below never import it (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable

from . import __version__
from .catalog.yamlsrc import CatalogError
from .errors import UsageError

# subcommand -> (module, function taking argv, one-line help)
PASSTHROUGH: dict[str, tuple[str, str, str]] = {
    "bench": ("infermatrix.client.cli", "main", "benchmark a running server (bench_serving-compatible)"),
    "sim": ("infermatrix.sim.cli", "main", "serve the simulated engine"),
    "catalog": ("infermatrix.commands.catalog", "main", "render docs/catalog.md from the recipes"),
    "collect": ("infermatrix.commands.results", "collect_main", "result files (levels, capacity, evals) into the history store"),
    "report": ("infermatrix.commands.results", "report_main", "plots, dashboard and job summary"),
    "compare": ("infermatrix.commands.results", "compare_main", "regressions between two runs"),
    "capacity": ("infermatrix.commands.capacity", "main",
                 "agentic capacity: the most concurrent sessions that meet each SLO tier"),
}

# subcommand -> (module with add_arguments(parser) and main(args), one-line help)
OWN: dict[str, tuple[str, str]] = {
    "validate": ("infermatrix.commands.validate",
                 "check every catalog file and render every recipe; one line per problem"),
    "plan": ("infermatrix.plan.cli", "expand a sweep into jobs (table, json, GitHub shards)"),
    "run": ("infermatrix.commands.run", "run one job: launch, prove it serves, measure, tear down"),
    "sweep": ("infermatrix.commands.sweep", "plan, run every job locally, collect and report"),
    "check-runner": ("infermatrix.commands.check_runner",
                     "is this GitHub Actions runner new enough for the workflows (docs/runners.md)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="infermatrix",
        description="Benchmark LLM inference serving: catalog → plan → run → collect → report.",
    )
    parser.add_argument("--version", action="version", version=f"infermatrix {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in OWN.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(p)
        p.set_defaults(handler=module)
    for name, (_, _, help_text) in PASSTHROUGH.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _run_guarded(fn: Callable[[], int]) -> int:
    try:
        return fn()
    except CatalogError as exc:
        exc.report(sys.stderr)
        return 2
    except UsageError as exc:
        print(f"infermatrix: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("infermatrix: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `infermatrix plan ... | head`: the reader left; say nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH:
        module, func, _ = PASSTHROUGH[argv[0]]
        try:
            entry = getattr(importlib.import_module(module), func)
        except (ImportError, AttributeError) as exc:
            print(f"infermatrix {argv[0]}: not available in this build ({exc})", file=sys.stderr)
            return 2
        return _run_guarded(lambda: entry(argv[1:]))
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0 if not argv else 2
    handler = importlib.import_module(args.handler)
    return _run_guarded(lambda: handler.main(args))


if __name__ == "__main__":
    sys.exit(main())
