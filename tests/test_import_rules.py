"""The walls between infermatrix's packages (docs/architecture.md), asserted two ways:

- at import time: each package, every module of it, is imported in a fresh interpreter and
  ``sys.modules`` must hold no package it may not use;
- in the source: every import statement (module level or inside a function, ``TYPE_CHECKING``
  blocks aside) must respect the same table, the packages' import graph has no cycle, and
  neither has the graph of modules inside any one package.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "infermatrix"
BASE = {"infermatrix", "errors", "jsonio", "cpus", "workers", "progress", "markup",
        "argtypes"}  # the package root (__version__), leaf modules
# package -> the other packages it may import (BASE always, except for the client)
MAY_IMPORT: dict[str, set[str]] = {
    "catalog": set(),
    "client": set(),
    "engines": {"catalog"},
    "plan": {"catalog", "evals"},  # the planner settles a job's eval plan (evals/plan.py)
    "sim": {"catalog"},
    "results": set(),
    "evals": {"catalog"},
    "report": {"catalog", "engines", "results"},
    # launch runs every measurement (levels, the capacity search) through its one loop
    "launch": {"catalog", "plan", "engines", "client", "sim", "evals", "capacity"},
    "capacity": {"catalog", "plan", "client", "sim"},
}
CLI_LAYER = {"cli", "commands"}  # the command line: may import every package
# the walls issue 13 names, checked on their own so a failure says which one fell
NEVER: list[tuple[str, str]] = [
    ("catalog", "client"), ("catalog", "engines"), ("catalog", "plan"), ("catalog", "launch"),
    ("results", "report"), ("engines", "report"), ("evals", "results"), ("results", "evals"),
    ("sim", "client"),
    # issue 29: launch runs capacity, never the reverse; a measurement neither stores nor draws
    ("capacity", "launch"), ("capacity", "report"), ("launch", "report"), ("results", "report"),
    ("capacity", "results"), ("launch", "results"),
]


def packages() -> list[str]:
    return sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file())


def test_every_package_has_a_rule() -> None:
    assert set(packages()) == set(MAY_IMPORT) | {"commands"}
    assert all(b not in MAY_IMPORT[a] for a, b in NEVER)


def _loaded_by(target: str, extra: str = "") -> set[str]:
    """The infermatrix packages in sys.modules after importing ``target`` and all its modules
    in a fresh interpreter (then running ``extra``)."""
    code = f"""
import importlib, json, pkgutil, sys
root = importlib.import_module({target!r})
for info in pkgutil.walk_packages(getattr(root, "__path__", []), root.__name__ + "."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
{extra}
print(json.dumps(sorted({{n.split(".")[1] if "." in n else n for n in sys.modules
                         if n == "infermatrix" or n.startswith("infermatrix.")}})))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=240, check=False, cwd=SRC.parent)
    assert res.returncode == 0, res.stderr
    return set(json.loads(res.stdout.splitlines()[-1]))


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_importing_a_package_loads_only_what_it_may(package: str) -> None:
    loaded = _loaded_by(f"infermatrix.{package}") - {package}
    allowed = MAY_IMPORT[package] | (BASE if package != "client" else {"infermatrix"})
    assert loaded <= allowed, f"infermatrix.{package} loads {sorted(loaded - allowed)}"


def test_subcommands_live_in_the_cli_layer_or_within_their_package() -> None:
    """A subcommand that joins packages lives in commands/; one a package keeps as its own
    entry point loads nothing its package may not."""
    from infermatrix.cli import OWN, PASSTHROUGH

    modules = {entry[0] for entry in (*PASSTHROUGH.values(), *OWN.values())}
    code = f"""
import importlib, json, sys
out = {{}}
for name in {sorted(modules)!r}:
    before = set(sys.modules)
    importlib.import_module(name)
    out[name] = sorted({{n.split(".")[1] for n in set(sys.modules) - before
                        if n.startswith("infermatrix.") and n.count(".") >= 1}})
    for n in set(sys.modules) - before:
        if n.startswith("infermatrix."):
            del sys.modules[n]
print(json.dumps(out))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=240, check=False, cwd=SRC.parent)
    assert res.returncode == 0, res.stderr
    wrong = {}
    for module, loaded in json.loads(res.stdout.splitlines()[-1]).items():
        owner = module.split(".")[1]
        if owner in CLI_LAYER:
            continue
        allowed = MAY_IMPORT[owner] | BASE | {owner}
        if set(loaded) - allowed:
            wrong[module] = sorted(set(loaded) - allowed)
    assert wrong == {}
    assert {"infermatrix.commands.results", "infermatrix.commands.catalog"} <= modules


def test_the_simulator_knows_no_client() -> None:
    """Loading the catalog, building a simulated engine from a recipe and its HTTP app, as
    `infermatrix sim` does, loads no part of the client."""
    extra = """
from infermatrix.catalog.loader import load_catalog
from infermatrix.sim.config import SimConfig
from infermatrix.sim import server
cat = load_catalog()
assert cat.workloads and any(w.kind == "agentic" for w in cat.workloads.values())
SimConfig.from_recipe(cat, sorted(cat.recipes)[0])
"""
    loaded = _loaded_by("infermatrix.sim", extra)
    assert "client" not in loaded, sorted(loaded)


# ---------------------------------------------------------------- the source


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path) -> set[str]:
    """The infermatrix packages (or top-level modules) ``path`` imports anywhere in it."""
    package = path.relative_to(SRC.parent).parts[:-1]  # what a relative import starts from
    tops = {p.stem for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                full = ".".join([*base, *([node.module] if node.module else [])])
                names = [full] if node.module else [f"{full}.{a.name}" for a in node.names]
            else:
                names = [node.module or ""]
        for name in names:
            bits = name.split(".")
            if bits[0] == "infermatrix":  # `from .. import __version__`: the package root
                out.add(bits[1] if len(bits) > 1 and bits[1] in tops else "infermatrix")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return out


def _graph() -> dict[str, dict[str, list[str]]]:
    """package -> imported package -> the files that import it."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        owner = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for target in _imports(path) - {owner}:
            graph.setdefault(owner, {}).setdefault(target, []).append(str(rel))
    return graph


def test_every_import_statement_respects_the_table() -> None:
    wrong = []
    for owner, targets in _graph().items():
        if owner in CLI_LAYER or owner in BASE:
            continue
        allowed = MAY_IMPORT[owner] | (BASE if owner != "client" else set())
        wrong += [f"{owner} -> {t} ({', '.join(files)})" for t, files in targets.items()
                  if t not in allowed]
    assert wrong == []


@pytest.mark.parametrize(("owner", "target"), NEVER, ids=lambda x: x)
def test_named_walls(owner: str, target: str) -> None:
    files = _graph().get(owner, {}).get(target, [])
    assert files == [], f"{owner} imports {target} in {files}"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (node -> the nodes it points to) as a path, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def test_no_import_cycle_between_packages() -> None:
    graph = _graph()
    cycle = find_cycle({k: set(v) for k, v in graph.items()})
    hops = zip(cycle or [], (cycle or [])[1:], strict=False)
    edges = [f"{a} -> {b} in {', '.join(graph[a][b])}" for a, b in hops]
    assert cycle is None, "import cycle: " + "; ".join(edges)


def _module_imports(path: Path, *, typing_too: bool = False) -> set[str]:
    """The modules of ``path``'s own package that ``path`` imports anywhere (``TYPE_CHECKING``
    blocks aside unless ``typing_too``), as dotted names below the package (``backends.base``)."""
    rel = path.relative_to(SRC)
    package = rel.parts[0]
    here = list(rel.parts[:-1])  # the folder a relative import starts from
    modules = {".".join(p.relative_to(SRC / package).with_suffix("").parts)
               for p in (SRC / package).rglob("*.py")}
    out: set[str] = set()

    def resolve(dotted: list[str]) -> None:
        if dotted[:1] != [package]:
            return
        for end in range(len(dotted), 1, -1):  # the longest prefix that is a module
            name = ".".join(dotted[1:end])
            if name in modules or f"{name}.__init__" in modules:
                out.add(name if name in modules else f"{name}.__init__")
                return

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not typing_too:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                mod = node.module.split(".") if node.module else []
                for alias in node.names:
                    resolve([*base, *mod, alias.name])
            elif node.module and node.module.startswith(f"infermatrix.{package}"):
                for alias in node.names:
                    resolve([*node.module.split(".")[1:], alias.name])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                resolve(alias.name.split(".")[1:] if alias.name.startswith("infermatrix.") else [])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    me = ".".join(rel.with_suffix("").parts[1:])
    return out - {me}


@pytest.mark.parametrize("package", sorted(p.name for p in SRC.iterdir()
                                           if (p / "__init__.py").is_file()))
def test_no_import_cycle_inside_a_package(package: str) -> None:
    """Modules of one package import each other one way (a cycle is two modules that are
    one): late imports inside functions and imports for type annotations count too (a module
    that names another's type depends on it as much as one that calls it)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((SRC / package).rglob("*.py")):
        name = ".".join(path.relative_to(SRC / package).with_suffix("").parts)
        # a package's __init__ re-exports its modules: it sits above them, not beside them
        graph[name] = {m for m in _module_imports(path, typing_too=True)
                       if not m.endswith("__init__")}
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle in {package}/: " + " -> ".join(cycle or [])


def test_the_scan_sees_late_imports_and_the_check_finds_cycles(tmp_path: Path) -> None:
    global SRC
    mod = tmp_path / "infermatrix" / "results" / "x.py"
    mod.parent.mkdir(parents=True)
    (mod.parent / "__init__.py").write_text("")
    mod.write_text("from .. import __version__\nfrom . import store\n"
                   "def f():\n    from ..report import build\n"
                   "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..evals import y\n"
                   "else:\n    import infermatrix.client.tokenizer\n")
    for name in ("report", "evals", "client"):
        (tmp_path / "infermatrix" / name).mkdir()
        (tmp_path / "infermatrix" / name / "__init__.py").write_text("")
    typed = mod.parent / "typed.py"  # a module that names the store's type only
    typed.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .store import S\n")
    (mod.parent / "store.py").write_text("")
    saved, SRC = SRC, tmp_path / "infermatrix"
    try:
        assert _imports(mod) == {"infermatrix", "results", "report", "client"}
        assert _module_imports(typed) == set()
        assert _module_imports(typed, typing_too=True) == {"store"}
    finally:
        SRC = saved
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "d": {"a", "c"}}) is None
