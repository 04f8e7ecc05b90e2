"""Load matrix/accuracy.yaml with the catalog's loader, so a mistake is `file:line: field: message`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from ..catalog.accuracy import AccuracyConfig, TaskOverride
from ..catalog.loader import Catalog, _validation_problems
from ..catalog.yamlsrc import CatalogError, load_yaml

ACCURACY_FILE = Path("matrix/accuracy.yaml")


def load_accuracy(root: Path, known_models: Iterable[str] | None = None) -> AccuracyConfig:
    """Parse ``root/matrix/accuracy.yaml``; CatalogError lists every problem with its line.

    With ``known_models``, a threshold for a model the catalog does not have is an error (a typo
    there would silently fall back to the default threshold).
    """
    path = Path(root) / ACCURACY_FILE
    doc = load_yaml(path, str(ACCURACY_FILE))
    if not isinstance(doc.data, dict):
        raise CatalogError([doc.problem((), "expected a mapping (tasks, default_tasks, thresholds)")])
    try:
        config = AccuracyConfig.model_validate(doc.data)
    except ValidationError as exc:
        raise CatalogError(_validation_problems(doc, exc)) from None
    if known_models is not None:
        known = set(known_models)
        problems = [doc.problem(("thresholds", "models", m), "unknown model (not in matrix/models.yaml)")
                    for m in config.thresholds.models if m not in known]
        if problems:
            raise CatalogError(problems)
    return config


def check_catalog(cat: Catalog) -> list[str]:
    """Problems (one line each) with accuracy.yaml and the eval policies of ``cat``'s sweeps."""
    try:
        accuracy = load_accuracy(cat.root, cat.models)
    except CatalogError as exc:
        return [str(p) for p in exc.problems]
    problems = []
    for name, sweep in cat.sweeps.items():
        for i, entry in enumerate(sweep.entries):
            policy = getattr(entry, "eval", None)
            for j, pick in enumerate(getattr(policy, "tasks", None) or []):
                task = pick.task if isinstance(pick, TaskOverride) else pick
                if task not in accuracy.tasks:
                    problems.append(str(cat.origin("sweep", name).problem(
                        ("entries", i, "eval", "tasks", j), f"unknown eval task {task!r} (not in {ACCURACY_FILE})")))
            for wl in getattr(policy, "workloads", None) or []:
                if wl not in entry.workloads:
                    problems.append(str(cat.origin("sweep", name).problem(
                        ("entries", i, "eval", "workloads"), f"workload {wl!r} is not one of this entry's")))
    return problems
