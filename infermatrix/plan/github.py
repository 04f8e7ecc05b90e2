"""Split jobs into GitHub Actions matrices and write them as step outputs.

GitHub caps one matrix at 256 jobs, so sweep.yml declares a fixed number of shard jobs, each a
matrix over ``fromJSON(needs.plan.outputs.shard_N)``. Every shard output is always written (an
unused one is ``[]``) so the workflow's references resolve, and ``shard_count`` says how many
carry work.
"""

from __future__ import annotations

import json
import math
import os
import sys
import uuid
from pathlib import Path
from typing import TextIO

from ..errors import UsageError
from .jobs import Job

MATRIX_CAP = 256  # GitHub's limit on jobs per matrix
MAX_SHARDS = 8  # shard jobs declared in .github/workflows/sweep.yml


class PlanError(UsageError):
    """A plan that cannot be written as asked; the CLI prints it as one line (exit 2)."""


class CapacityError(PlanError):
    pass


def shard(jobs: list[Job], max_shards: int = MAX_SHARDS, cap: int = MATRIX_CAP) -> list[list[Job]]:
    """Contiguous, balanced shards of at most ``cap`` jobs; CapacityError past max_shards."""
    if len(jobs) > cap * max_shards:
        raise CapacityError(
            f"{len(jobs)} jobs exceed the workflow's capacity of {max_shards} shards × {cap} = "
            f"{cap * max_shards}; narrow the sweep with filters or raise MAX_SHARDS in "
            "infermatrix/plan/github.py and the shard jobs in .github/workflows/sweep.yml"
        )
    if not jobs:
        return []
    count = math.ceil(len(jobs) / cap)
    size = math.ceil(len(jobs) / count)
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


def matrix_entry(job: Job) -> dict[str, object]:
    """What one matrix cell needs: the full job is re-planned on the runner from its id."""
    return {
        "id": job.id,
        "recipe": job.recipe,
        "workload": job.workload,
        "runner": job.runner,
        "concurrency": " ".join(str(c) for c in job.concurrency),
        "fingerprint": job.fingerprint,
        "timeout_minutes": job.timeout_minutes,
    }


def github_outputs(jobs: list[Job], max_shards: int = MAX_SHARDS) -> dict[str, str]:
    shards = shard(jobs, max_shards)
    out = {"jobs_total": str(len(jobs)), "shard_count": str(len(shards))}
    for i in range(max_shards):
        cells = [matrix_entry(j) for j in shards[i]] if i < len(shards) else []
        out[f"shard_{i}"] = json.dumps(cells, separators=(",", ":"))
    return out


def _write_outputs(fh: TextIO, outputs: dict[str, str]) -> None:
    for key, value in outputs.items():
        delim = f"EOF_{uuid.uuid4().hex}"
        fh.write(f"{key}<<{delim}\n{value}\n{delim}\n")


def write_github_outputs(outputs: dict[str, str], path: str | Path | None = None) -> str:
    """Append outputs to $GITHUB_OUTPUT with heredoc delimiters (values may hold any text).
    Outside GitHub (no $GITHUB_OUTPUT, no path) they go to stdout, in the same format.
    Returns where they went."""
    target = path or os.environ.get("GITHUB_OUTPUT") or ""
    if not str(target):
        _write_outputs(sys.stdout, outputs)
        return "stdout (GITHUB_OUTPUT is not set)"
    try:
        with Path(target).open("a", encoding="utf-8") as fh:
            _write_outputs(fh, outputs)
    except OSError as exc:
        raise PlanError(f"{target}: cannot append GitHub outputs: {exc.strerror or exc}") from None
    return str(target)
