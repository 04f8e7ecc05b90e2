"""The plan as a markdown table for GitHub's job summary (what a dry run shows)."""

from __future__ import annotations

import re
from pathlib import Path

from .github import PlanError
from .jobs import Job

MAX_ROWS = 500  # GitHub keeps 1 MiB of summary per step; the plan artifact has every job


def _cell(text: str) -> str:
    """Text in a table cell, never markup: markdown's punctuation escaped, HTML as entities."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_{}\[\]()#+!|~])", r"\\\1", text)


def measures(job: Job) -> str:
    """What a job measures: its levels, or the tiers of its capacity search."""
    if job.capacity is not None:
        return "capacity " + ",".join(t.name for t in job.capacity.tiers)
    return ",".join(map(str, job.concurrency))


def summary_markdown(jobs: list[Job], sweep: str) -> str:
    lines = [f"### Plan of {_cell(sweep)}: {len(jobs)} jobs", "",
             f"{len({j.runner for j in jobs})} fleets, {sum(j.gpus for j in jobs)} GPUs over all "
             "jobs, "
             f"{sum(j.capacity is not None for j in jobs)} capacity searches", ""]
    if jobs:
        lines += ["| job | runner | GPUs | concurrency | time-out (min) | fingerprint |",
                  "|---|---|--:|---|--:|---|"]
        lines += [f"| {_cell(j.id)} | {_cell(j.runner)} | {j.gpus} | "
                  f"{_cell(measures(j))} | {j.timeout_minutes} | {_cell(j.fingerprint)} |"
                  for j in jobs[:MAX_ROWS]]
    if len(jobs) > MAX_ROWS:
        lines += ["", f"… and {len(jobs) - MAX_ROWS} more jobs: every one is in the run's "
                      "`plan` artifact."]
    return "\n".join(lines) + "\n\n"


def write_summary(jobs: list[Job], sweep: str, path: str | Path) -> None:
    try:
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(summary_markdown(jobs, sweep))
    except OSError as exc:
        raise PlanError(f"{path}: cannot append the plan summary: {exc.strerror or exc}") from None
