"""The GitHub job-summary markdown: what ran, what failed, the frontier, the best configs."""

from __future__ import annotations

from collections.abc import Sequence

from ..markup import md_code, md_text
from ..results.agentic import AgenticRecord, capacity_rows, tier_order
from ..results.collect import CollectSummary
from ..results.failures import JobFailure
from ..results.pareto import best_at, frontiers, usable
from ..results.records import Record, order_runs
from . import simulated
from .agentic import fmt, groups

DEFAULT_THRESHOLDS = (10.0, 20.0, 50.0, 100.0)
_PER = {"agents_per_gpu": "/GPU", "agents_per_mw": "/MW", "agents_per_usd_hour": "/$·h"}


def _f(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def agentic_summary(records: Sequence[AgenticRecord]) -> list[str]:
    """Markdown lines: passing concurrency per SLO tier per configuration (latest searches)."""
    lines = ["", "### Agentic capacity (concurrent agents per SLO tier)", ""]
    rows = [r for r in capacity_rows(records) if r["latest"]]
    for model, workload, tiers, members in groups(rows, tier_order(records)):
        lines += [f"**{md_text(model or 'unknown model')} · {md_text(workload)}**", "",
                  "| recipe | GPUs | " + " | ".join(
                      f"{t} {label}" for t in tiers for label in ("agents", *_PER.values())) + " |",
                  "|---|---|" + "---|" * (len(tiers) * (1 + len(_PER)))]
        for r in members:
            cells = []
            for t in tiers:
                c = r["tiers"].get(t)
                if c is None:
                    cells += ["–"] * (1 + len(_PER))
                    continue
                agents = ("" if c["bounded"] else "≥ ") + fmt(c["agents"])
                cells += [agents, *(fmt(c[k]) for k in _PER)]
            lines.append(f"| {md_text(r['recipe'])} | {fmt(r['gpus'])} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines[:-1]


def title_line(records: Sequence[Record], agentic: Sequence[AgenticRecord] = ()) -> str:
    """The summary's first line: simulated results say so before anything else."""
    m = simulated.of(records, agentic)
    if m is None:
        return "## infermatrix results"
    if m.every:
        return (f"## infermatrix results · SIMULATED: simulated engine {m.clock}, not measured on "
                "hardware")
    return (f"## infermatrix results · PARTLY SIMULATED: {m.simulated} of {m.total} results from "
            f"the simulated engine {m.clock}, not measured on hardware")


def counts_line(records: Sequence[Record], agentic: Sequence[AgenticRecord] = (),
                failures: Sequence[JobFailure] = ()) -> str:
    """What the summary is made of: throughput levels and capacity results, their jobs and
    runs (a capacity job gives one result per SLO tier), and the jobs that failed."""
    runs = order_runs([(r.run_id, r.started_at) for r in records]
                      + [(a.run_id, None) for a in agentic]
                      + [(f.run_id, f.failed_at) for f in failures])
    jobs = (len({(r.run_id, r.job_id) for r in records} | {f.key for f in failures})
            + len({(a.run_id, a.recipe, a.workload) for a in agentic}))
    ok = sum(r.ok for r in records)
    parts = []
    if records or not agentic:
        parts.append(f"{len(records)} levels ({ok} ok, {len(records) - ok} failed)")
    if agentic:
        unbounded = sum(not a.bounded for a in agentic)
        parts.append(f"{len(agentic)} capacity results (one per SLO tier"
                     f"{f', {unbounded} not bounded' if unbounded else ''})")
    if failures:
        parts.append(f"{len(failures)} failed jobs")
    return (f"{' and '.join(parts)} from {jobs} jobs in {len(runs)} run(s): "
            f"{', '.join(map(md_text, runs[-3:]))}{' …' if len(runs) > 3 else ''}.")


def job_summary(records: Sequence[Record], collect: CollectSummary | None = None,
                thresholds: Sequence[float] = DEFAULT_THRESHOLDS, max_failures: int = 50,
                agentic: Sequence[AgenticRecord] = (), failures: Sequence[JobFailure] = (),
                current: Sequence[Record] | None = None) -> str:
    """``current``: the records the best-at and frontier tables are drawn from (the report
    passes the latest measurement of each configuration, as its plots); default: all."""
    lines = [title_line(records, agentic), "", counts_line(records, agentic, failures)]
    if failures:
        lines += ["", f"> **{len(failures)} jobs failed** before or during their levels: see "
                      "Failed jobs below."]
    if collect is not None and (collect.skipped or collect.missing):
        lines += ["", f"> **Warning**: collect skipped files — {collect.line()}."]
    if records or not agentic:
        lines += throughput_summary(records if current is None else current, thresholds)
    if agentic:
        lines += agentic_summary(agentic)
    failed = [r for r in records if not r.ok]
    if failed:
        lines += ["", f"### Failed levels ({len(failed)})", ""]
        lines += [f"- {md_code(r.job_id)} c={r.concurrency}: {md_text(r.error or 'failed')}"
                  for r in failed[:max_failures]]
        if len(failed) > max_failures:
            lines.append(f"- … and {len(failed) - max_failures} more")
    lines += failed_jobs(failures, max_failures)
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    """A reason or id as inline markdown: no table, link or emphasis syntax taken from it."""
    return " ".join(text.split()).replace("|", "/").replace("`", "'")


def failed_jobs(failures: Sequence[JobFailure], most: int = 50) -> list[str]:
    """Markdown lines: each failed job, the stage it broke at, and why."""
    if not failures:
        return []
    lines = ["", f"### Failed jobs ({len(failures)})", "",
             "| job | runner | stage | reason |", "|---|---|---|---|"]
    for f in failures[:most]:
        sim = " (simulated)" if f.simulated else ""
        lines.append(f"| `{_md(f.job_id)}` | {_md(f.runner)} | {f.stage}{sim} | "
                     f"`{_md(f.reason)}` |")
    if len(failures) > most:
        lines.append(f"| … and {len(failures) - most} more | | | |")
    return lines


def throughput_summary(records: Sequence[Record], thresholds: Sequence[float]) -> list[str]:
    """Markdown lines: the best configuration per interactivity threshold, the frontiers."""
    lines = ["", "### Best configuration at a given interactivity", "",
              "| model | workload | ≥ tok/s/user | recipe | topology | conc | tok/s/GPU | tok/s/user | $/M out |",
              "|---|---|---|---|---|---|---|---|---|"]
    for b in best_at(records, thresholds):
        r = b.record
        if r is None:
            lines.append(f"| {md_text(b.model)} | {md_text(b.workload)} | {b.threshold:g} | none meets it | | | | | |")
        else:
            lines.append(f"| {md_text(b.model)} | {md_text(b.workload)} | {b.threshold:g} | {md_text(r.recipe)} | "
                         f"{md_text(r.topology)} | "
                         f"{r.concurrency} | {_f(r.output_tput_per_gpu)} | {_f(r.interactivity)} | "
                         f"{_f(r.usd_per_m_output_tokens, 2)} |")
    lines += ["", "### Pareto frontier (output tok/s/GPU vs tok/s/user, all hardware and engines)", ""]
    for (model, workload), lines_ in frontiers(usable(records, "interactivity", "output_tput_per_gpu")).items():
        pts = ", ".join(f"{md_text(r.hardware)}/{md_text(r.engine)} c{r.concurrency}: {_f(r.output_tput_per_gpu, 0)} @ "
                        f"{_f(r.interactivity)}" for r in lines_[("all",)])
        lines.append(f"- **{md_text(model)} · {md_text(workload)}**: {pts}")
    return lines
