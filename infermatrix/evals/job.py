"""The eval step as a job runs it: planned once at start, run after each picked level.

``launch/job.py`` calls ``JobEvals.for_job`` before its level loop and ``after_level`` after each
level while the server still runs; the manifest entries it returns name the eval files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..catalog.accuracy import AccuracyConfig
from ..catalog.loader import Catalog
from ..catalog.yamlsrc import CatalogError
from ..jsonio import write_json_atomic
from .config import ACCURACY_FILE, load_accuracy
from .plan import LevelPlan, entry_for, plan_job, policy_of
from .record import EvalRecord, document, file_name, identity_fields
from .step import Target, now, run_eval

Log = Callable[[str], None]


@dataclass
class JobEvals:
    plan: LevelPlan
    accuracy: AccuracyConfig | None
    root: Path
    problem: str | None = None  # why the planned evals cannot run (recorded as failed evals)
    records: list[EvalRecord] = field(default_factory=list)

    @classmethod
    def for_job(cls, cat: Catalog, job: Any, log: Log) -> JobEvals:
        if policy_of(entry_for(cat, job.sweep, job.recipe, job.workload)) is None:
            return cls({}, None, cat.root)  # this sweep asks for no evaluation: nothing to load
        try:
            accuracy = load_accuracy(cat.root, cat.models)
            return cls(plan_job(cat, job, accuracy), accuracy, cat.root)
        except (CatalogError, KeyError) as exc:
            # The sweep wants evals but they cannot be set up: record failures, never skip quietly.
            reason = (f"{ACCURACY_FILE}: {exc}" if isinstance(exc, CatalogError)
                      else f"unknown eval task {exc} (not in {ACCURACY_FILE})")
            log(f"  eval set-up failed: {reason}")
            return cls({max(job.concurrency): []}, None, cat.root, problem=reason)

    def after_level(self, concurrency: int, target: Target, identity: dict[str, Any],
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
            threshold = self.accuracy.threshold(identity["model"], name) if self.accuracy else None
            rec = run_eval(name, task, target=target, identity=identity, concurrency=concurrency,
                           job_dir=job_dir, catalog_root=self.root, threshold=threshold, log=log)
            self.records.append(rec)
            entries.append(_entry(rec))
        return entries


def _entry(rec: EvalRecord) -> dict[str, Any]:
    return {"task": rec.task, "concurrency": rec.concurrency, "status": rec.status,
            "score": rec.score, "file": file_name(rec.task, rec.concurrency), "error": rec.error}
