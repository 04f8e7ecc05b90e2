"""Load the catalog tree into typed objects, collecting every problem with its file and line.

Layout (relative to the catalog root, normally the repository):
    matrix/hardware.yaml, matrix/models.yaml, matrix/workloads.yaml, matrix/sweeps/*.yaml,
    runners/fleets.yaml, benchmarks/<model>/<name>.yaml (one recipe per file).
A recipe's id is its path under benchmarks/ without the suffix: ``llama-3.1-70b/h200-vllm-fp8``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from .contents import Catalog, Origin
from .safety import UnsafeValue, safe_id
from .schema import (
    Fleet,
    Hardware,
    Model,
    Name,
    Recipe,
    RecipeFamily,
    Sweep,
    Workload,
    instantiate,
    unknown_axes,
)
from .yamlsrc import CatalogError, Loc, Problem, SourceDoc, load_yaml

HARDWARE_FILE = Path("matrix/hardware.yaml")
MODELS_FILE = Path("matrix/models.yaml")
WORKLOADS_FILE = Path("matrix/workloads.yaml")
SWEEPS_DIR = Path("matrix/sweeps")
FLEETS_FILE = Path("runners/fleets.yaml")
RECIPES_DIR = Path("benchmarks")

_NAME: TypeAdapter[str] = TypeAdapter(Name)


def default_root() -> Path:
    """The catalog root: the current directory if it holds one, else this checkout."""
    cwd = Path.cwd()
    if (cwd / HARDWARE_FILE).is_file():
        return cwd
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / HARDWARE_FILE).is_file():
        return checkout
    return cwd


def _validation_problems(doc: SourceDoc, exc: ValidationError, prefix: Loc = ()) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        # pydantic adds the name of a failing union/literal member or "[key]" for dict keys
        loc = tuple(p for p in loc
                    if not (isinstance(p, str) and (p.startswith("function-") or p == "[key]")))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "field required"
        msg = msg.removeprefix("Value error, ")
        problems.append(doc.problem((*prefix, *loc), msg))
    return problems


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _load_mapping(
    path: Path, root: Path, entry_type: type[BaseModel], kind: str, cat: Catalog,
    target: dict[str, Any], problems: list[Problem],
) -> None:
    """A file of name -> entry; each entry is checked on its own so one typo hides no others."""
    try:
        doc = load_yaml(path, _display(path, root))
    except CatalogError as exc:
        problems.extend(exc.problems)
        return
    if not isinstance(doc.data, dict):
        problems.append(doc.problem((), f"expected a mapping of {kind} name -> entry"))
        return
    for name, raw in doc.data.items():
        try:
            _NAME.validate_python(name)
        except ValidationError:
            problems.append(doc.problem((name,), f"invalid {kind} name"))
            continue
        if name in target or (kind, name) in cat.broken:
            other = cat.origins.get((kind, name))
            problems.append(doc.problem((name,), f"duplicate {kind} name"
                                        + (f" (also in {other.doc.path})" if other else "")))
            continue
        try:
            target[name] = entry_type.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_validation_problems(doc, exc, (name,)))
            cat.broken.add((kind, name))
            continue
        cat.origins[(kind, name)] = Origin(doc, (name,))


def _load_one(
    path: Path, root: Path, model: type[BaseModel], kind: str, name: str, cat: Catalog,
    target: dict[str, Any], problems: list[Problem],
) -> None:
    try:
        doc = load_yaml(path, _display(path, root))
    except CatalogError as exc:
        problems.extend(exc.problems)
        return
    if not isinstance(doc.data, dict):
        problems.append(doc.problem((), f"expected a mapping describing one {kind}"))
        return
    try:
        entry = model.model_validate(doc.data)
    except ValidationError as exc:
        problems.extend(_validation_problems(doc, exc))
        cat.broken.add((kind, name))
        return
    if name in target:
        problems.append(doc.problem((), f"duplicate {kind} name {name!r} (also in "
                                    f"{cat.origin(kind, name).doc.path})"))
        return
    target[name] = entry
    cat.origins[(kind, name)] = Origin(doc)


def _load_family(
    path: Path, root: Path, rid: str, cat: Catalog, problems: list[Problem],
) -> bool:
    """A recipe file with a ``family:`` block: one recipe per point, id ``<rid>/<name>``.
    Returns False when the file is an ordinary recipe."""
    try:
        doc = load_yaml(path, _display(path, root))
    except CatalogError:
        return False  # _load_one reports it
    if not isinstance(doc.data, dict) or "family" not in doc.data:
        return False
    template = {k: v for k, v in doc.data.items() if k != "family"}
    try:
        family = RecipeFamily.model_validate(doc.data["family"])
    except ValidationError as exc:
        problems.extend(_validation_problems(doc, exc, ("family",)))
        return True
    for point in family.variants():
        missing = unknown_axes(template, point) | unknown_axes(family.name, point)
        if missing:
            problems.append(doc.problem(("family",), f"no value for {', '.join(sorted(missing))} "
                                        f"in point {point}"))
            continue
        vid = f"{rid}/{instantiate(family.name, point)}"
        bad = unsafe_recipe_id(vid)
        if bad:
            problems.append(doc.problem(("family", "name"), bad))
            continue
        try:
            entry = Recipe.model_validate(instantiate(template, point))
        except ValidationError as exc:
            problems.extend(
                Problem(p.path, p.line, p.field, f"{p.message} (variant {vid})")
                for p in _validation_problems(doc, exc)
            )
            cat.broken.add(("recipe", vid))
            continue
        if vid in cat.recipes:
            problems.append(doc.problem(("family", "name"), f"duplicate recipe id {vid!r}"))
            continue
        cat.recipes[vid] = entry
        cat.origins[("recipe", vid)] = Origin(doc, note=f"(variant {vid})")
    return True


def recipe_id(path: Path, recipes_dir: Path) -> str:
    try:
        rel = path.resolve().relative_to(recipes_dir.resolve())
    except ValueError:
        rel = Path(path.parent.name) / path.name
    return rel.with_suffix("").as_posix()


def unsafe_recipe_id(rid: str) -> str | None:
    """Why a recipe id (its path under benchmarks/) cannot name files, or None."""
    try:
        for part in rid.split("/"):
            safe_id(part, "recipe id part")
    except UnsafeValue as exc:
        return f"recipe id {rid!r}: {exc}"
    return None


def classify(path: Path) -> str:
    """Which kind of catalog file a path holds, from its name and folder."""
    parts = path.resolve().parts
    if path.name == "hardware.yaml":
        return "hardware"
    if path.name == "models.yaml":
        return "model"
    if path.name == "workloads.yaml":
        return "workload"
    if path.name == "fleets.yaml":
        return "fleet"
    if len(parts) >= 2 and parts[-2] == "sweeps":
        return "sweep"
    return "recipe"


def _symlink_loop(path: Path) -> Problem:
    return Problem(str(path), 0, "", "symlink loop (a link that leads back to itself or to a "
                   "folder above it)")


def yaml_files(directory: Path) -> list[Path]:
    """Every .yaml/.yml file below ``directory``, in order, following symlinks once: a link
    back into its own ancestry (or to itself) is a CatalogError, never a hang."""
    if not directory.is_dir():
        return []
    found: list[Path] = []
    problems: list[Problem] = []
    stack: list[tuple[Path, frozenset[tuple[int, int]]]] = []
    top = directory.stat()
    stack.append((directory, frozenset({(top.st_dev, top.st_ino)})))
    while stack:
        folder, ancestors = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(str(folder), 0, "", f"cannot read folder: {exc.strerror}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                st = entry.stat()  # follows the link
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    problems.append(_symlink_loop(path))
                continue  # a dangling link: nothing to read
            if stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if key in ancestors:
                    problems.append(_symlink_loop(path))
                else:
                    stack.append((path, ancestors | {key}))
            elif path.suffix in {".yaml", ".yml"}:
                found.append(path)
    if problems:
        raise CatalogError(problems)
    return sorted(found)


def catalog_files(root: Path) -> list[Path]:
    """The catalog's files; a named file that is not a regular file (a folder, say) is listed
    so the loader reports it."""
    files = [root / HARDWARE_FILE, root / MODELS_FILE, root / WORKLOADS_FILE, root / FLEETS_FILE]
    return [f for f in files if f.exists()] + yaml_files(root / SWEEPS_DIR) + yaml_files(
        root / RECIPES_DIR
    )


def check_root(root: Path) -> None:
    """A missing or empty catalog root is a mistake (a typo in --root), not an empty catalog."""
    if not root.is_dir():
        raise CatalogError([Problem(str(root), 0, "", "catalog root: no such folder")])
    if not (root / HARDWARE_FILE).exists():
        raise CatalogError([Problem(str(root), 0, "", f"not a catalog root: no {HARDWARE_FILE}")])


def load_catalog(root: Path | None = None, files: Iterable[Path] | None = None) -> Catalog:
    """Load and cross-validate a catalog; raise CatalogError listing every problem found.

    ``files`` overrides the file set (each file's kind comes from its name and folder);
    by default every catalog file under ``root`` is read.
    """
    from .validate import cross_validate  # late: the checks load only when a catalog does

    root = (root or default_root()).resolve()
    cat = Catalog(root=root)
    problems: list[Problem] = []
    if files is None:
        check_root(root)
    paths = list(files) if files is not None else catalog_files(root)
    mappings = {
        "hardware": (Hardware, cat.hardware),
        "model": (Model, cat.models),
        "workload": (Workload, cat.workloads),
        "fleet": (Fleet, cat.fleets),
    }
    for path in paths:
        kind = classify(path)
        if kind in mappings:
            entry_type, target = mappings[kind]
            _load_mapping(path, root, entry_type, kind, cat, target, problems)
        elif kind == "sweep":
            _load_one(path, root, Sweep, "sweep", path.stem, cat, cat.sweeps, problems)
        else:
            rid = recipe_id(path, root / RECIPES_DIR)
            bad = unsafe_recipe_id(rid)
            if bad:  # the id names job folders and SLURM jobs: no odd characters
                problems.append(Problem(_display(path, root), 0, "", bad))
                continue
            if _load_family(path, root, rid, cat, problems):
                continue
            _load_one(path, root, Recipe, "recipe", rid, cat, cat.recipes, problems)
    problems.extend(cross_validate(cat))
    if problems:
        raise CatalogError(problems)
    return cat
