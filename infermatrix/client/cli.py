"""`infermatrix bench`: flag-compatible with bench_serving as InferenceMAX calls it.

``add_arguments(parser)`` adds the flags to any parser (the top-level CLI wires it as a
subcommand); ``main(argv)`` is the whole command. Bad input → one line on stderr, exit 2.
This module runs the command; the flags are declared in bench_parser.py, translated to a
BenchConfig (and back) in bench_flags.py, and the summary is laid out in bench_summary.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .bench import run_benchmark_sync
from .bench_flags import ARGV_ORDER, SESSION_FLAGS, config_argv, config_from_args
from .bench_parser import DATASET_ALIASES, add_arguments, build_parser
from .bench_summary import format_agentic, format_summary
from .errors import ClientInputError
from .result import append_jsonl, default_filename, write_result

__all__ = [
    "ARGV_ORDER", "DATASET_ALIASES", "SESSION_FLAGS", "add_arguments", "build_parser",
    "config_argv", "config_from_args", "format_summary", "main", "run_from_args",
]


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    return run_from_args(ns)


def run_from_args(ns: argparse.Namespace) -> int:
    """Run with an already-parsed namespace (for a parent CLI that used add_arguments)."""
    try:
        cfg = config_from_args(ns)
        result = run_benchmark_sync(cfg)
    except ClientInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    print(format_summary(result))
    if "agentic" in result:
        print(format_agentic(result))
    for note in result.get("notes") or []:
        print(f"warning: {note}", file=sys.stderr)
    if cfg.save_result or cfg.result_filename:
        path = Path(cfg.result_dir or ".") / (cfg.result_filename or default_filename(result))
        try:
            write_result(result, path)
        except OSError as e:
            print(f"error: cannot write result {path}: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"result written to {path}", file=sys.stderr)
    if cfg.output_file:
        try:
            append_jsonl(result, cfg.output_file)
        except OSError as e:
            print(f"error: cannot append to {cfg.output_file}: {e.strerror or e}", file=sys.stderr)
            return 2
    if not result["passed"]:
        print(
            f"error: error rate {result['error_rate']:.1%} exceeds {cfg.max_error_rate:.1%} "
            f"({result['error_counts']})",
            file=sys.stderr,
        )
        return 1
    return 0
