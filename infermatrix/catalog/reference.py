"""The field reference of the catalog files (docs/fields.md), generated from the schema.

Each field's text is its ``description=`` in schema/ or, for the fields that have none
there, its entry in field_docs.py. ``undocumented`` names a field with neither, ``stale`` an
entry for a field that is gone: `infermatrix catalog --check` fails on either, and on a
docs/fields.md that is not what ``markdown`` writes.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from .field_docs import FIELD_DOCS
from .schema import Fleet, Hardware, Model, Sweep, Workload

# file -> (what one entry is, its model)
FILES: dict[str, tuple[str, type[BaseModel]]] = {
    "matrix/hardware.yaml": ("an accelerator, keyed by its name (H200)", Hardware),
    "matrix/models.yaml": ("a model, keyed by its name (llama-3.1-70b-instruct)", Model),
    "runners/fleets.yaml": ("a runner fleet, keyed by its GitHub runner label", Fleet),
    "matrix/workloads.yaml": ("a traffic shape, keyed by its name", Workload),
    "matrix/sweeps/NAME.yaml": ("a whole file: one sweep, named by the file", Sweep),
}
OUTPUT = "docs/fields.md"


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def models() -> list[type[BaseModel]]:
    """Every model the files are made of, each once, in reading order."""
    seen: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.append(model)
        for info in model.model_fields.values():
            for inner in _models_in(info.annotation):
                visit(inner)

    for _, model in FILES.values():
        visit(model)
    return seen


def describe(model: type[BaseModel], name: str, docs: Mapping[str, str] | None = None) -> str:
    info = model.model_fields[name]
    docs = FIELD_DOCS if docs is None else docs
    return (info.description or docs.get(f"{model.__name__}.{name}", "")).strip()


def undocumented(docs: Mapping[str, str] | None = None) -> list[str]:
    return [f"{m.__name__}.{name}" for m in models() for name in m.model_fields
            if not describe(m, name, docs)]


def stale(docs: Mapping[str, str] | None = None) -> list[str]:
    fields = {f"{m.__name__}.{name}" for m in models() for name in m.model_fields}
    return sorted(set(FIELD_DOCS if docs is None else docs) - fields)


def type_text(annotation: Any) -> str:
    """A field's type as a reader of YAML thinks of it."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [type_text(a) for a in args if a is not type(None)]
        return " or ".join(parts) + (" or null" if type(None) in args else "")
    if origin is list:
        return f"list of {type_text(args[0])}" if args else "list"
    if origin is dict:
        return f"map of {type_text(args[0])} → {type_text(args[1])}" if args else "map"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    names = {str: "text", int: "integer", float: "number", bool: "true/false"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation))


def default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "**required**"
    value = info.default_factory() if info.default_factory else info.default  # type: ignore[call-arg]
    if value is PydanticUndefined or value is None:
        return "none"
    if isinstance(value, BaseModel):
        return "see its table"
    if value in ({}, [], ""):
        return "empty"
    return f"`{str(value).lower() if isinstance(value, bool) else value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def markdown(docs: Mapping[str, str] | None = None) -> str:
    lines = [
        "# Catalog field reference",
        "",
        "Generated from the schema (`infermatrix/catalog/schema/`, texts from its "
        "descriptions and `infermatrix/catalog/field_docs.py`) by `infermatrix catalog`; "
        "`infermatrix catalog --check` fails when this page is stale or a field has no text. "
        "How to add a fleet, a model, an engine version or a recipe: [operating.md]"
        "(operating.md). Recipes: [recipes.md](recipes.md).",
        "",
        "| file | one entry |",
        "|---|---|",
        *(f"| `{path}` | {what}: [{model.__name__}](#{model.__name__.lower()}) |"
          for path, (what, model) in FILES.items()),
    ]
    for model in models():
        lines += ["", f"## {model.__name__}", ""]
        doc = (model.__doc__ or "").strip().split("\n\n")[0]
        if doc and not doc.startswith(("Usage docs", "A base class")):
            lines += [" ".join(doc.replace("``", "`").split()), ""]
        lines += ["| field | type | default | what |", "|---|---|---|---|"]
        for name, info in model.model_fields.items():
            lines.append(f"| `{name}` | {_cell(type_text(info.annotation))} | "
                         f"{_cell(default_text(info))} | {_cell(describe(model, name, docs))} |")
    return "\n".join(lines) + "\n"
