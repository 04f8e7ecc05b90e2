"""The plan's hand-off to GitHub Actions: plan files travel as an artifact, outputs carry ids.

GitHub caps a matrix at 256 jobs, one job's outputs at 1 MB and all outputs of a run at 50 MB
(both counted in UTF-16, two bytes per ASCII character). So the plan job never puts jobs in its
outputs: it writes the plan as files, one per shard of at most 256 jobs (``shard-<i>.json``, a
JSON list of whole jobs as ``plan --format json`` prints them), which sweep.yml uploads as the
artifact ``plan``; its outputs are ``jobs_total``, ``shard_count`` and ``shards`` (the shard ids).
sweep.yml fans out over the shard ids, and job.yml's ``select`` job downloads the artifact and
turns its one shard into a matrix (``plan --format matrix``): a cell is ``{"job": <the whole
job>, "runs_on": <labels>}``, so nothing is rebuilt from flags on the runner.
"""

from __future__ import annotations

import json
import math
import os
import sys
import uuid
from pathlib import Path
from typing import TextIO, TypeVar

from ..errors import UsageError
from .jobs import Job

MATRIX_CAP = 256  # GitHub's limit on jobs per matrix
MAX_SHARDS = 256  # sweep.yml's fan-out over shard ids is a matrix too: 256 × 256 jobs at most
OUTPUT_CAP = 1_000_000  # GitHub: one job's outputs (job.yml's select job holds one shard)
RUN_OUTPUT_CAP = 50_000_000  # GitHub: every output of a workflow run together
HOSTED_RUNNER = "ubuntu-latest"  # where a simulated sweep runs its jobs (no GPU needed)
SHARD_FILE = "shard-{}.json"


T = TypeVar("T")


class PlanError(UsageError):
    """A plan that cannot be written as asked; the CLI prints it as one line (exit 2)."""


class CapacityError(PlanError):
    pass


def output_bytes(text: str) -> int:
    """An output's size as GitHub counts it (UTF-16: two bytes per ASCII character)."""
    return 2 * len(text) if text.isascii() else len(text.encode("utf-16-le"))


def shard(jobs: list[T], max_shards: int = MAX_SHARDS, cap: int = MATRIX_CAP,
          min_count: int = 1) -> list[list[T]]:
    """Contiguous, balanced shards of at most ``cap`` jobs (at least ``min_count`` of them when
    there are jobs); CapacityError past max_shards."""
    count = max(math.ceil(len(jobs) / cap), min_count if jobs else 0)
    if count > max_shards:
        raise CapacityError(
            f"{len(jobs)} jobs exceed the workflow's capacity of {max_shards} shards × {cap} = "
            f"{cap * max_shards} (and {OUTPUT_CAP:,} bytes of matrix per shard); narrow the "
            "sweep with filters")
    if not jobs:
        return []
    size = math.ceil(len(jobs) / count)
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


def runs_on(job: Job, simulate: bool) -> str | list[str]:
    """The runner labels of a job's matrix cell: its fleet's self-hosted label, or a
    GitHub-hosted runner when the sweep is simulated (virtual time, no GPU)."""
    return HOSTED_RUNNER if simulate else ["self-hosted", job.runner]


def _cell(job_text: str, labels: str | list[str]) -> str:
    return f'{{"job":{job_text},"runs_on":{json.dumps(labels, separators=(",", ":"))}}}'


def _cell_bytes(job: Job, job_text: str) -> int:
    """The larger of a job's two matrix cells (self-hosted or simulated), as GitHub counts it,
    with the comma between cells."""
    labels = max(output_bytes(_cell("", runs_on(job, s))) for s in (False, True))
    return output_bytes(job_text) + labels + 2


def write_plan(jobs: list[Job], plan_dir: str | Path,
               max_shards: int = MAX_SHARDS) -> dict[str, str]:
    """Write ``plan_dir/shard-<i>.json`` and return the plan job's outputs (ids and counts).
    Shards are sized so that each one's matrix fits one job's outputs, and the whole plan the
    run's; a sweep past either limit fails here with one line, before any job starts."""
    max_shards = min(max_shards, MAX_SHARDS)  # sweep.yml's matrix over the ids holds no more
    texts = [j.model_dump_json() for j in jobs]  # compact JSON, by pydantic's own encoder
    sizes = [_cell_bytes(j, t) for j, t in zip(jobs, texts, strict=True)]
    if sum(sizes) > RUN_OUTPUT_CAP:
        raise CapacityError(f"{len(jobs)} jobs make {sum(sizes):,} bytes of shard matrices, over "
                            f"GitHub's {RUN_OUTPUT_CAP:,} per run; narrow the sweep with filters")
    if jobs and max(sizes) + 2 > OUTPUT_CAP:
        big = jobs[sizes.index(max(sizes))]
        raise CapacityError(f"job {big.id}: {max(sizes):,} bytes, over GitHub's {OUTPUT_CAP:,} "
                            "of outputs per job on its own")
    min_count = math.ceil(sum(sizes) / OUTPUT_CAP) if jobs else 0
    while True:  # shards of job indices
        shards = shard(list(range(len(jobs))), max_shards, min_count=min_count)
        if all(2 + sum(sizes[i] for i in s) <= OUTPUT_CAP for s in shards):  # 2: the brackets
            break
        min_count = max(min_count, len(shards)) + 1  # an uneven shard: cut finer
    folder = Path(plan_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob(SHARD_FILE.format("*")):  # an earlier plan's shards
            stale.unlink()
        for i, part in enumerate(shards):
            body = ",".join(texts[k] for k in part)
            (folder / SHARD_FILE.format(i)).write_text(f"[{body}]\n", encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"{folder}: cannot write the plan: {exc.strerror or exc}") from None
    return {"jobs_total": str(len(jobs)), "shard_count": str(len(shards)),
            "shards": json.dumps(list(range(len(shards))))}


def matrix_outputs(jobs: list[Job], simulate: bool = False) -> dict[str, str]:
    """job.yml's matrix for one shard: ``jobs`` (the cells) and ``count``."""
    if len(jobs) > MATRIX_CAP:
        raise CapacityError(f"{len(jobs)} jobs: one matrix holds at most {MATRIX_CAP}; "
                            "write the plan with --format github (one file per shard)")
    cells = [_cell(j.model_dump_json(), runs_on(j, simulate)) for j in jobs]
    text = f"[{','.join(cells)}]"
    if output_bytes(text) > OUTPUT_CAP:
        raise CapacityError(f"{len(jobs)} jobs make {output_bytes(text):,} bytes of matrix, over "
                            f"GitHub's {OUTPUT_CAP:,} per job; plan fewer jobs per shard")
    return {"jobs": text, "count": str(len(jobs))}


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
