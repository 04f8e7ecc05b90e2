"""The eval step as a job runs it: planned by the planner (``job.evals``), run after each
picked level.

``launch/job.py`` calls ``JobEvals.for_job`` before its level loop and ``after_level`` after each
level while the server still runs; the manifest entries it returns name the eval files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalog.loader import Catalog
from ..jsonio import write_json_atomic
from .plan import EvalsByLevel
from .record import EvalRecord, document, file_name, identity_fields
from .step import EvalServer, now, run_eval

Log = Callable[[str], None]


@dataclass
class JobEvals:
    plan: EvalsByLevel
    root: Path
    thresholds: dict[tuple[int, str], float | None] = field(default_factory=dict)
    problem: str | None = None  # why the planned evals cannot run (recorded as failed evals)
    records: list[EvalRecord] = field(default_factory=list)

    @classmethod
    def for_job(cls, cat: Catalog, job: Any, log: Log) -> JobEvals:
        """The evals the planner wrote into the job (``job.evals``); no sweep file is read."""
        plan: EvalsByLevel = {}
        thresholds: dict[tuple[int, str], float | None] = {}
        problem = None
        for step in job.evals:
            plan.setdefault(step.after, [])
            if step.error is not None or step.spec is None:
                problem = step.error or f"eval task {step.task!r} has no settings"
                continue
            plan[step.after].append((step.task, step.spec))
            thresholds[(step.after, step.task)] = step.threshold
        if problem is not None:
            log(f"  eval set-up failed: {problem}")
        return cls(plan, cat.root, thresholds, problem)

    def after_level(self, concurrency: int, target: EvalServer, identity: dict[str, Any],
                    job_dir: Path, log: Log) -> list[dict[str, Any]]:
        """Run this level's evals (if any); manifest entries for them."""
        if concurrency not in self.plan:
            return []
        if self.problem is not None:
            rec = EvalRecord.model_validate({**identity_fields(identity), "concurrency": concurrency,
                                             "task": "setup", "error": self.problem,
                                             "started_at": now(), "finished_at": now()})
            write_json_atomic(job_dir / file_name("setup", concurrency), document(rec, None))
            self.records.append(rec)
            return [_entry(rec)]
        entries = []
        for name, task in self.plan[concurrency]:
            rec = run_eval(name, task, target=target, identity=identity, concurrency=concurrency,
                           job_dir=job_dir, catalog_root=self.root,
                           threshold=self.thresholds.get((concurrency, name)), log=log)
            self.records.append(rec)
            entries.append(_entry(rec))
        return entries

    def skipped(self, concurrency: int, reason: str, log: Log) -> list[dict[str, Any]]:
        """This level's evals (if any) recorded as skipped with ``reason`` (the job has no
        server to evaluate, as in virtual time): a step never vanishes without a word."""
        if concurrency not in self.plan:
            return []
        names = ["setup"] if self.problem is not None else [n for n, _ in self.plan[concurrency]]
        log(f"  evals after c={concurrency} skipped: {reason}")
        return [{"task": name, "concurrency": concurrency, "status": "skipped", "score": None,
                 "file": None, "error": None, "reason": reason} for name in names]


def _entry(rec: EvalRecord) -> dict[str, Any]:
    return {"task": rec.task, "concurrency": rec.concurrency, "status": rec.status,
            "score": rec.score, "file": file_name(rec.task, rec.concurrency), "error": rec.error}
