"""What a loaded catalog holds (``Catalog``) and where each entry came from (``Origin``).

Its own module, below both the loader that fills it and the cross-file checks that read it
(``validate.py``), so neither imports the other's module to name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .schema import Fleet, Hardware, Model, Recipe, Sweep, Workload
from .yamlsrc import Loc, Problem, SourceDoc


@dataclass(frozen=True)
class Origin:
    """Where an entry was defined, so cross-file checks can point at the right line."""

    doc: SourceDoc
    prefix: Loc = ()
    note: str = ""  # e.g. "(variant x/y)" for a recipe family's member

    def problem(self, loc: Loc, message: str) -> Problem:
        return self.doc.problem((*self.prefix, *loc), f"{message} {self.note}".rstrip())


@dataclass
class Catalog:
    root: Path
    hardware: dict[str, Hardware] = field(default_factory=dict)
    models: dict[str, Model] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)
    fleets: dict[str, Fleet] = field(default_factory=dict)
    recipes: dict[str, Recipe] = field(default_factory=dict)
    sweeps: dict[str, Sweep] = field(default_factory=dict)
    origins: dict[tuple[str, str], Origin] = field(default_factory=dict)
    # entries that exist but failed validation: references to them are not reported again
    broken: set[tuple[str, str]] = field(default_factory=set)

    def origin(self, kind: str, name: str) -> Origin:
        return self.origins[(kind, name)]

    def checkpoint(self, recipe: Recipe | str) -> str:
        """What a recipe (or the recipe of that id) serves: its own checkpoint, else its
        model's HF id. The one default of the served-model name (engines, simulator, launch,
        catalog page)."""
        r = self.recipes[recipe] if isinstance(recipe, str) else recipe
        return r.checkpoint or self.models[r.model].hf_id
