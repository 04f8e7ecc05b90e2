"""Typed schema of matrix/accuracy.yaml and of the eval policy a sweep entry may carry.

accuracy.yaml names the evaluations (our task name -> the lm-eval task, the metric to read, the
few-shot count and sample limit), which run by default, the per-model thresholds with a default,
and the freshness window. A policy says at which concurrency levels a job evaluates and may
override a task's settings. It belongs to the catalog (sweeps embed the policy); infermatrix/evals/
runs what it describes.
"""

from __future__ import annotations

import statistics
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .safety import Text

TaskName = Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
Score = Annotated[float, Field(ge=0, le=1)]
PositiveInt = Annotated[int, Field(ge=1, le=10**9)]
# A concurrency level of the sweep entry, named by position or given as a number.
LevelPick = Literal["min", "median", "max", "all"] | PositiveInt


class _Strict(BaseModel):
    # as the catalog schema: a boolean is not a number, no inf/nan
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class TaskSettings(_Strict):
    """What can be tuned per run of one evaluation; None means "lm-eval's own default"."""

    num_fewshot: Annotated[int, Field(ge=0, le=1000)] | None = None
    limit: PositiveInt | None = Field(default=None, description="samples per task; none: all")
    concurrency: PositiveInt | None = Field(
        default=None, description="requests in flight (lm-eval num_concurrent); none: the level's")
    max_gen_toks: PositiveInt | None = None
    timeout_minutes: PositiveInt | None = None


class EvalTask(TaskSettings):
    """One evaluation as accuracy.yaml defines it."""

    lm_eval_task: str = Field(min_length=1, description="task name lm-eval knows")
    metric: str = Field(min_length=1, description="key in lm-eval's results, e.g. exact_match,strict-match")
    include_path: Text | None = Field(
        default=None, description="folder of custom lm-eval task YAMLs (relative: to the catalog root)")
    timeout_minutes: PositiveInt = 60


class TaskOverride(TaskSettings):
    """A policy's change to one task's settings (the task must exist in accuracy.yaml)."""

    task: TaskName


class EvalPolicy(_Strict):
    """Which jobs evaluate, and what. Embedded in a sweep entry or a workload as ``eval:``."""

    enabled: bool = True
    at: list[LevelPick] = Field(default_factory=lambda: ["max", "median"], min_length=1)
    tasks: list[TaskName | TaskOverride] | None = Field(
        default=None, description="default: accuracy.yaml's default_tasks")
    workloads: list[str] | None = Field(
        default=None, description="which of the entry's workloads evaluate (default: all); name "
        "one to evaluate once per recipe")

    def levels(self, concurrency: list[int]) -> list[int]:
        """The concurrency levels (of a sweep entry's list) after which to evaluate."""
        if not self.enabled or not concurrency:
            return []
        ordered = sorted(set(concurrency))
        picked: set[int] = set()
        for pick in self.at:
            if pick == "all":
                picked.update(ordered)
            elif pick == "min":
                picked.add(ordered[0])
            elif pick == "max":
                picked.add(ordered[-1])
            elif pick == "median":
                picked.add(int(statistics.median_low(ordered)))  # a level that exists
            elif pick in ordered:
                picked.add(pick)
        return sorted(picked)


class Thresholds(_Strict):
    default: dict[TaskName, Score] = Field(default_factory=dict)
    models: dict[str, dict[TaskName, Score]] = Field(default_factory=dict)


class AccuracyConfig(_Strict):
    """matrix/accuracy.yaml."""

    freshness_days: Annotated[float, Field(gt=0, le=3650)] = 14
    tasks: dict[TaskName, EvalTask] = Field(min_length=1)
    default_tasks: list[TaskName] = Field(min_length=1)
    thresholds: Thresholds = Field(default_factory=Thresholds)

    @field_validator("default_tasks")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("task names must be unique")
        return v

    @model_validator(mode="after")
    def _known_tasks(self) -> AccuracyConfig:
        unknown = [t for t in self.default_tasks if t not in self.tasks]
        for table in (self.thresholds.default, *self.thresholds.models.values()):
            unknown += [t for t in table if t not in self.tasks]
        if unknown:
            raise ValueError(f"unknown task(s) {', '.join(sorted(set(unknown)))}; "
                             f"tasks defines {', '.join(sorted(self.tasks))}")
        return self

    def threshold(self, model: str, task: str) -> float | None:
        """The minimum passing score; None when neither the model nor the default sets one."""
        per_model = self.thresholds.models.get(model, {})
        if task in per_model:
            return per_model[task]
        return self.thresholds.default.get(task)

    def resolve(self, policy: EvalPolicy | None) -> list[tuple[str, EvalTask]]:
        """The tasks a policy runs, with its overrides applied (KeyError names an unknown task)."""
        picks = policy.tasks if policy is not None and policy.tasks is not None else self.default_tasks
        out: list[tuple[str, EvalTask]] = []
        for pick in picks:
            name = pick if isinstance(pick, str) else pick.task
            if name not in self.tasks:
                raise KeyError(name)
            task = self.tasks[name]
            if isinstance(pick, TaskOverride):
                changes = pick.model_dump(exclude={"task"}, exclude_none=True)
                task = task.model_copy(update=changes)
            out.append((name, task))
        return out
