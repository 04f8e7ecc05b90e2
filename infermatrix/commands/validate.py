"""`infermatrix validate [PATHS]`: the catalog's own checks, then what needs the packages above it.

The catalog checks every file and every cross-file rule (catalog/validate.py); this command adds
what the catalog may not import: every recipe rendered through its engine module (a recipe
whose args contradict its parallelism fails here, not at launch) and the simulator's coverage.
Problems are ``file:line: field: message`` with exit 2; warnings are printed and exit 0.
"""

from __future__ import annotations

import argparse
import re
import sys

from ..catalog import cli as catalog_cli
from ..catalog.loader import Catalog, check_root, default_root, load_catalog
from ..catalog.validate import catalog_warnings, entry_recipes
from ..catalog.yamlsrc import CatalogError, Problem
from ..engines import RenderError, render
from ..sim.coverage import has_efficiency_data, no_data_warning

add_arguments = catalog_cli.add_arguments

# "recipe-id: field.path[0].args.key: message", as engines/ words a RenderError
_FIELD = re.compile(r"[A-Za-z0-9_.=\[\]-]+")
_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _loc(field: str) -> tuple[str | int, ...]:
    return tuple(int(i) if i else name for i, name in _PART.findall(field))


def render_problem(cat: Catalog, rid: str, exc: RenderError) -> Problem:
    """A render error as a problem at the recipe's line for the field it names."""
    origin = cat.origin("recipe", rid)
    text = str(exc).removeprefix(f"{rid}: ")
    field, sep, message = text.partition(": ")
    if sep and _FIELD.fullmatch(field):
        return origin.problem(_loc(field), message)
    return origin.problem((), text)


def render_problems(cat: Catalog) -> list[Problem]:
    out = []
    for rid in cat.recipes:
        try:
            render(cat, rid)
        except RenderError as exc:
            out.append(render_problem(cat, rid, exc))
    return out


def warnings(cat: Catalog) -> list[Problem]:
    """Hardware without a fleet; hardware a sweep runs that the simulator has no data for."""
    out = catalog_warnings(cat)
    used = {cat.recipes[rid].hardware for sweep in cat.sweeps.values() for entry in sweep.entries
            for rid in entry_recipes(cat, entry)}
    for name, hw in cat.hardware.items():
        if name in used and not has_efficiency_data(name, hw.vendor):
            out.append(cat.origin("hardware", name).problem((), no_data_warning(name, hw.vendor)))
    return out


def main(args: argparse.Namespace) -> int:
    root = (args.root or default_root()).resolve()
    check_root(root)
    cat = load_catalog(root, catalog_cli.files_to_check(root, args.paths))
    problems = render_problems(cat)
    if problems:
        raise CatalogError(problems)
    for warning in warnings(cat):
        print(f"warning: {warning}", file=sys.stderr)
    print(catalog_cli.summary(cat))
    return 0
