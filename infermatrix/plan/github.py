"""Split jobs into GitHub Actions matrices and write them as step outputs.

GitHub caps one matrix at 256 jobs, so the plan is cut into shards of at most 256: sweep.yml
fans out with a matrix over ``shards`` (the indices that carry work), each cell calling job.yml
with ``needs.plan.outputs[shard_N]``, and job.yml fans out over that shard's jobs. A matrix cell
is the whole job as the planner wrote it (``Job.model_dump``), which job.yml hands to
``infermatrix run`` as a file: nothing is rebuilt from flags on the runner. Every shard output is
always written (an unused one is ``[]``), and ``shard_count`` says how many carry work.
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
MAX_SHARDS = 8  # shards the workflow fans out over (sweep.yml's matrix over `shards`)
OUTPUT_CAP = 1_000_000  # bytes: GitHub keeps at most 1 MB of outputs per job (the plan job's)


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
    """One matrix cell: the complete job, exactly as the planner wrote it."""
    return job.model_dump(mode="json")


def github_outputs(jobs: list[Job], max_shards: int = MAX_SHARDS) -> dict[str, str]:
    shards = shard(jobs, max_shards)
    out = {"jobs_total": str(len(jobs)), "shard_count": str(len(shards)),
           "shards": json.dumps(list(range(len(shards))))}
    for i in range(max_shards):
        cells = [matrix_entry(j) for j in shards[i]] if i < len(shards) else []
        out[f"shard_{i}"] = json.dumps(cells, separators=(",", ":"))
    size = sum(len(k) + len(v.encode()) for k, v in out.items())
    if size > OUTPUT_CAP:
        raise CapacityError(f"{len(jobs)} jobs make {size:,} bytes of plan outputs, over GitHub's "
                            f"{OUTPUT_CAP:,} per job; narrow the sweep with filters")
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
