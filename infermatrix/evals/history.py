"""Eval records from run folders: every ``eval-*.json`` a job wrote, the unusable ones named.

`infermatrix collect` keeps them in the history store's ``evals`` table (``results.Store``
owns it; the CLI layer wires the two, as ``evals`` and ``results`` do not import each other).
Rows are keyed by (run, job, task, level): collecting the same artifacts twice changes nothing.
The whole eval document, lm-eval's results included, is kept compressed beside the parsed fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..jsonio import loads_bounded, read_bounded
from .record import EvalRecord, from_document

EVAL_GLOB = "eval-*.json"


@dataclass
class EvalCollect:
    records: list[EvalRecord] = field(default_factory=list)
    raw: dict[tuple[str, str, str, int], bytes] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)


def collect_evals(paths: Iterable[Path]) -> EvalCollect:
    """Every eval-*.json under ``paths``; unusable files are listed in ``problems``, never raised."""
    out = EvalCollect()
    seen: set[Path] = set()
    for root in map(Path, paths):
        files = sorted(root.rglob(EVAL_GLOB)) if root.is_dir() else [root]
        for path in files:
            if path.resolve() in seen or not path.is_file():
                continue
            seen.add(path.resolve())
            try:
                data = read_bounded(path)
                rec = from_document(loads_bounded(data), str(path))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
                out.problems.append((str(path), f"eval: {str(exc).splitlines()[0] if str(exc) else exc!r}"))
                continue
            if rec.key in out.raw:
                out.problems.append((str(path), "eval: duplicate run/job/task/level"))
                continue
            out.records.append(rec)
            out.raw[rec.key] = data
    return out
