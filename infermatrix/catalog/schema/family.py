"""A recipe family: one recipe file standing for several recipes, its ``${axis}`` template
references and their substitution (catalog/loader.py expands a family into its variants)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, model_validator

from ..placeholders import strings_in
from .field_types import Scalar, Strict


class RecipeFamily(Strict):
    """A recipe file that stands for several recipes: the rest of the file is a template whose
    ``${axis}`` references (lower-case names) take each point's values, e.g. TensorRT-LLM's
    submit.sh sweeping disaggr_torch.slurm's positional parameters. Variant ids are
    ``<file id>/<name>`` with ``name`` formatted from the point."""

    name: str = Field(description="variant name template, e.g. ctx${num_ctx_servers}-gen${num_gen_servers}")
    axes: dict[str, list[Scalar]] = Field(default_factory=dict, description="crossed with each other")
    points: list[dict[str, Scalar]] = Field(default_factory=list, description="explicit points")

    @model_validator(mode="after")
    def _has_points(self) -> RecipeFamily:
        if not self.axes and not self.points:
            raise ValueError("a family needs axes or points")
        return self

    def variants(self) -> list[dict[str, Scalar]]:
        crossed: list[dict[str, Scalar]] = [{}]
        for axis, values in self.axes.items():
            crossed = [{**c, axis: v} for c in crossed for v in values]
        return [{**p, **c} for p in (self.points or [{}]) for c in crossed]


FAMILY_REF = re.compile(r"\$\{([a-z][a-z0-9_]*)\}")


def _axis_text(value: Scalar) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def instantiate(template: Any, point: dict[str, Scalar]) -> Any:
    """The template with ``${axis}`` replaced: a whole-string reference takes the value's type."""
    if isinstance(template, str):
        whole = FAMILY_REF.fullmatch(template)
        if whole and whole.group(1) in point:
            return point[whole.group(1)]
        return FAMILY_REF.sub(
            lambda m: _axis_text(point[m.group(1)]) if m.group(1) in point else m.group(0), template
        )
    if isinstance(template, dict):
        return {instantiate(k, point): instantiate(v, point) for k, v in template.items()}
    if isinstance(template, list):
        return [instantiate(v, point) for v in template]
    return template


def unknown_axes(template: Any, point: dict[str, Scalar]) -> set[str]:
    """``${axis}`` references in a template that the point gives no value for."""
    return {n for text in strings_in(template) for n in FAMILY_REF.findall(text) if n not in point}
