"""The eval record: one evaluation of one task after one concurrency level of one job.

Written beside the level results as ``eval-<task>-c<N>.json`` (kind ``eval-result``), with the
same identity fields as a level result, the parsed score and its provenance, and lm-eval's own
results JSON embedded so the number can always be traced back to what the harness wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..jsonio import read_json_bounded

EVAL_SCHEMA_VERSION = 1
EVAL_KIND = "eval-result"
# Identity fields copied from a job's level-result block (launch/job.py identity_block).
IDENTITY_FIELDS = ("run_id", "job_id", "fingerprint", "recipe", "model", "hardware", "engine",
                   "engine_version", "image", "precision", "workload", "runner", "simulated",
                   "git_sha")

EvalKey = tuple[str, str, str, int]


class EvalRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")  # a newer writer may add fields: still readable

    schema_version: int = EVAL_SCHEMA_VERSION
    kind: Literal["eval-result"] = EVAL_KIND
    # ---- what was evaluated (same meaning as in a level result)
    run_id: str = Field(min_length=1)
    job_id: str = Field(min_length=1)
    fingerprint: str = ""
    recipe: str = Field(min_length=1)
    model: str = Field(min_length=1)
    hardware: str = ""
    engine: str = ""
    engine_version: str | None = ""
    image: str | None = ""
    precision: str = ""
    workload: str = ""
    runner: str = ""
    simulated: bool = False
    git_sha: str | None = None
    concurrency: int = Field(ge=1, description="the level this eval followed, on the same server")
    # ---- how
    task: str = Field(min_length=1, description="our task name (matrix/accuracy.yaml)")
    lm_eval_task: str = ""
    metric: str = ""
    num_fewshot: int | None = None
    limit: int | None = None
    eval_concurrency: int | None = None
    endpoint: str = ""
    command: list[str] = Field(default_factory=list)
    lm_eval_version: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    # ---- outcome
    status: Literal["ok", "failed"] = "failed"
    error: str | None = None
    score: float | None = None
    stderr: float | None = None
    task_version: str | None = None
    n_samples: int | None = None
    n_samples_total: int | None = None
    threshold: float | None = Field(default=None, description="at run time; the gate re-reads accuracy.yaml")
    source: str | None = Field(default=None, exclude=True)  # where it was read from (not written)

    @property
    def key(self) -> EvalKey:
        return (self.run_id, self.job_id, self.task, self.concurrency)

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.score is not None


def identity_fields(block: dict[str, Any]) -> dict[str, Any]:
    """The part of a level result's identity block that an eval record repeats."""
    return {k: block[k] for k in IDENTITY_FIELDS if k in block}


def file_name(task: str, concurrency: int) -> str:
    return f"eval-{task}-c{concurrency}.json"


def document(rec: EvalRecord, lm_eval_results: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON written to disk: the record plus lm-eval's results (None when there were none)."""
    return {**rec.model_dump(mode="json"), "lm_eval": lm_eval_results}


def is_eval_document(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == EVAL_KIND


def from_document(doc: Any, source: str | None = None) -> EvalRecord:
    """An eval record from its JSON; ValueError with a one-line reason when it is unusable."""
    if not is_eval_document(doc):
        raise ValueError("not an infermatrix eval-result")
    try:
        rec = EvalRecord.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    return rec.model_copy(update={"source": source})


def read_eval_file(path: Path) -> EvalRecord:
    try:
        doc = read_json_bounded(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"unreadable eval result ({exc})") from None
    return from_document(doc, str(path))
