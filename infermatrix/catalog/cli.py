"""`infermatrix validate`'s catalog side: its arguments, the files it checks, its summary line.

The command itself is infermatrix/commands/validate.py (it also renders every recipe).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from .loader import (
    HARDWARE_FILE,
    Catalog,
    catalog_files,
    yaml_files,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path,
                        help="catalog files or folders to check against the catalog (default: all)")
    parser.add_argument("--root", type=Path, help="catalog root (default: this checkout)")


def files_to_check(root: Path, paths: list[Path]) -> list[Path]:
    """The root's catalog with the given files added or put in place of their namesakes."""
    extra: list[Path] = []
    for path in paths:
        if path.is_dir():
            if (path / HARDWARE_FILE).is_file():  # a whole other catalog
                extra.extend(catalog_files(path))
            else:
                extra.extend(yaml_files(path))
        elif path.exists():  # a file (or something the loader reports as not one)
            extra.append(path)
        else:
            raise UsageError(f"{path}: no such file or folder")
    replaced = {p.resolve() for p in extra}
    names = {p.name for p in extra if p.name in {"hardware.yaml", "models.yaml",
                                                   "workloads.yaml", "fleets.yaml"}}
    base = [p for p in catalog_files(root) if p.resolve() not in replaced and p.name not in names]
    return base + extra


def summary(cat: Catalog) -> str:
    return (f"ok: {len(cat.recipes)} recipes, {len(cat.models)} models, {len(cat.hardware)} "
            f"hardware, {len(cat.workloads)} workloads, {len(cat.sweeps)} sweeps, "
            f"{len(cat.fleets)} fleets")
