"""Which levels the loop measures (``loop.Strategy``), on any executor.

``fixed_levels``: a fixed workload's concurrency levels, each recorded as a raw result, the
job's evals after the levels they follow (or, where the executor has no server, recorded as
skipped with the reason). ``capacity_search``: the agentic capacity search, which picks its own
levels (each drained and flushed first) and writes ``capacity.json``; the manifest lists the
searched levels and the tiers. ``strategy_for`` picks by the job's measurement.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..jsonio import write_json_atomic
from ..plan.jobs import Job
from .job import LevelFailed, error_rate_problem, level_line, record_level
from .jobs_progress import CAPACITY_FILE  # progress counts it as the job's one unit
from .provenance import utc_now
from .readiness import NotReady
from .state import to_measure

if TYPE_CHECKING:
    from .run import Executor, Log, Run, Strategy



def fixed_levels(run: Run, ex: Executor) -> None:
    """Every level of the job not measured yet, then its evals, against the still-warm server."""
    from ..evals.job import JobEvals  # accuracy evals the planner put in the job

    cat, job, manifest, log = run.cat, run.job, run.manifest, run.log
    assert run.block is not None
    wl = cat.workloads[job.workload]
    evals = JobEvals.for_job(cat, job, log)
    target = ex.eval_target(run)
    manifest["evals"] = []
    for i, conc in enumerate(to_measure(job.concurrency, manifest)):
        between = ex.between(run, wl.flush_cache_between_levels) if i else {}
        started = utc_now()
        t0 = time.perf_counter()
        result = ex.level(run, conc)
        t1 = time.perf_counter()
        error = error_rate_problem(result, wl.max_error_rate)
        ok = error is None
        dead = ex.died()
        if dead is not None:
            ok, error = False, f"{dead.name} exited with code {dead.exit_code()} during the level"
        record_level(run.job_dir, manifest, result, {**run.block, **ex.energy(t0, t1, result)},
                     conc, started, error, between)
        log(level_line(conc, result, t1 - t0))
        if dead is not None:
            raise NotReady(f"{dead.name} exited with code {dead.exit_code()} during the "
                           f"c={conc} level; log tail:\n{dead.tail()}")
        if isinstance(target, str):  # no server to evaluate: say so, never drop the step
            manifest["evals"] += evals.skipped(conc, target, log)
        else:  # evals run against the still-warm server, after the level
            manifest["evals"] += evals.after_level(conc, target, result["infermatrix"],
                                                   run.job_dir, log)
        write_json_atomic(run.job_dir / "manifest.json", manifest)
        if not ok and run.on_level_failure == "stop":
            raise LevelFailed(f"c={conc}: {error}; stopping (--on-level-failure stop)")


def capacity_search(run: Run, ex: Executor) -> None:
    """The job's capacity search on the executor, recorded in the job folder."""
    doc = ex.search(run)
    m = run.job.capacity
    assert m is not None
    doc["sessions"] = m.sessions.model_dump(mode="json")
    doc["infermatrix"]["finished_at"] = utc_now()
    record_capacity(run.job_dir, run.manifest, doc, run.log)


def record_capacity(job_dir: Path, manifest: dict[str, Any], doc: dict[str, Any], log: Log) -> None:
    """Write the document; list its searched levels and its tiers in the manifest. A level
    past the capacity fails its tiers by design: it is measured (ok), and judged in the file."""
    write_json_atomic(job_dir / CAPACITY_FILE, doc)
    manifest["levels"] = []  # one search is one measurement: a resumed job searches afresh
    for lv in doc["levels"]:
        manifest["levels"].append({"concurrency": lv["concurrency"], "status": "ok",
                                   "file": CAPACITY_FILE, "error": None,
                                   "error_rate": lv.get("error_rate")})
    manifest["capacity"] = {"file": CAPACITY_FILE, "tiers": {
        t["tier"]["name"]: {"agents": t["passing_concurrency"], "bounded": t["bounded"]}
        for t in doc["tiers"]}}
    write_json_atomic(job_dir / "manifest.json", manifest)
    for t in doc["tiers"]:
        log(f"  {t['tier']['name']}: {t['passing_concurrency']} agents"
            f"{'' if t['bounded'] else ' (not bounded)'} over {t['gpus']} GPUs")


def strategy_for(job: Job) -> Strategy:
    return capacity_search if job.capacity is not None else fixed_levels
