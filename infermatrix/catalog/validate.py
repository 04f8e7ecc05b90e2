"""Checks that span files: references resolve, parallelism fits the hardware and the fleets."""

from __future__ import annotations

import fnmatch
import math
from pathlib import Path

from .contents import Catalog, Origin
from .schema import PRECISIONS, Recipe, SweepEntry
from .yamlsrc import Loc, Problem

# Weights may use at most this share of a GPU's memory: the rest is KV cache and activations.
MAX_WEIGHT_MEMORY_SHARE = 0.95


def weight_gb_per_gpu(cat: Catalog, recipe: Recipe, gpus: int) -> float:
    return cat.models[recipe.model].weight_bytes_b(recipe.precision) / gpus


def _recipe_problems(cat: Catalog, rid: str, recipe: Recipe) -> list[Problem]:
    origin = cat.origin("recipe", rid)
    out: list[Problem] = []
    if recipe.model not in cat.models or recipe.hardware not in cat.hardware:
        if recipe.model not in cat.models and ("model", recipe.model) not in cat.broken:
            out.append(origin.problem(("model",), f"unknown model {recipe.model!r} "
                                      "(see matrix/models.yaml)"))
        if recipe.hardware not in cat.hardware and ("hardware", recipe.hardware) not in cat.broken:
            out.append(origin.problem(("hardware",), f"unknown hardware {recipe.hardware!r} "
                                      "(see matrix/hardware.yaml)"))
        return out  # the remaining checks need both
    hw = cat.hardware[recipe.hardware]
    model = cat.models[recipe.model]
    dtype = PRECISIONS[recipe.precision][0]
    if dtype not in hw.tflops:
        out.append(origin.problem(("precision",), f"{recipe.hardware} has no {dtype} compute "
                                  f"for precision {recipe.precision!r}"))
    for i, pool in enumerate(recipe.topology.pools):
        loc = ("topology", "pools", i, "parallel")
        par = pool.parallel
        if model.attention_heads % par.attention_tp:
            out.append(origin.problem((*loc, "tp"), f"attention tensor parallelism {par.attention_tp} "
                                      f"must divide the model's {model.attention_heads} attention heads"))
        if par.gpus > hw.gpus_per_node and par.gpus % hw.gpus_per_node:
            out.append(origin.problem(loc, f"an instance of {par.gpus} GPUs spans nodes of "
                                      f"{hw.gpus_per_node} {recipe.hardware} GPUs unevenly"))
        if par.gpus > hw.scale_up_domain and par.gpus % hw.scale_up_domain:
            out.append(origin.problem(loc, f"an instance of {par.gpus} GPUs does not fill whole "
                                      f"scale-up domains of {hw.scale_up_domain}"))
        per_gpu = weight_gb_per_gpu(cat, recipe, par.gpus)
        if per_gpu > hw.memory_gb * MAX_WEIGHT_MEMORY_SHARE:
            out.append(origin.problem(loc, f"weights need {per_gpu:.0f} GB per GPU at "
                                      f"{recipe.precision}; {recipe.hardware} has {hw.memory_gb:g} GB"))
    max_len = recipe.max_model_len
    if max_len and max_len > model.max_context:
        out.append(origin.problem(("max_model_len",), f"{max_len} exceeds {recipe.model}'s context "
                                  f"of {model.max_context}"))
    return out


def _fleet_problems(cat: Catalog) -> list[Problem]:
    out = []
    for label, fleet in cat.fleets.items():
        if fleet.hardware not in cat.hardware and ("hardware", fleet.hardware) not in cat.broken:
            out.append(cat.origin("fleet", label).problem(("hardware",),
                                                         f"unknown hardware {fleet.hardware!r}"))
    return out


def fleet_fits(cat: Catalog, recipe: Recipe, label: str) -> str | None:
    """Why ``recipe`` cannot run on fleet ``label``, or None when it can."""
    fleet = cat.fleets[label]
    if fleet.hardware != recipe.hardware:
        return f"fleet {label!r} has {fleet.hardware}, the recipe needs {recipe.hardware}"
    nodes = sum(
        p.instances * math.ceil(p.parallel.gpus / fleet.gpus_per_node) for p in recipe.topology.pools
    )
    if nodes > fleet.nodes:
        return f"the recipe needs {nodes} nodes of {fleet.gpus_per_node} GPUs; fleet {label!r} has {fleet.nodes}"
    return None


def match_recipes(cat: Catalog, patterns: list[str]) -> list[str]:
    return [rid for rid in cat.recipes if any(fnmatch.fnmatchcase(rid, p) for p in patterns)]


def entry_recipes(cat: Catalog, entry: SweepEntry) -> list[str]:
    """The recipes a sweep entry names: its ids/globs, narrowed by its tag filters."""
    keep, drop = set(entry.tags), set(entry.exclude_tags)
    return [rid for rid in match_recipes(cat, entry.recipes)
            if (not keep or keep & set(cat.recipes[rid].tags)) and not drop & set(cat.recipes[rid].tags)]


def _sweep_problems(cat: Catalog, faulty: set[str]) -> list[Problem]:
    out = []
    for name, sweep in cat.sweeps.items():
        origin = cat.origin("sweep", name)
        for i, entry in enumerate(sweep.entries):
            loc = ("entries", i)
            for j, pattern in enumerate(entry.recipes):
                if not match_recipes(cat, [pattern]):
                    out.append(origin.problem((*loc, "recipes", j), f"no recipe matches {pattern!r}"))
            if match_recipes(cat, entry.recipes) and not entry_recipes(cat, entry):
                out.append(origin.problem((*loc,), "the tag filters leave no recipe"))
            for j, wl in enumerate(entry.workloads):
                if wl not in cat.workloads:
                    out.append(origin.problem((*loc, "workloads", j), f"unknown workload {wl!r}"))
                elif cat.workloads[wl].kind == "fixed" and not entry.concurrency:
                    out.append(origin.problem((*loc, "concurrency"), f"workload {wl!r} is fixed: "
                                              "the entry needs its concurrency levels"))
            for j, label in enumerate(entry.runners or []):
                if label != "*" and label not in cat.fleets and ("fleet", label) not in cat.broken:
                    out.append(origin.problem((*loc, "runners", j), f"unknown runner label {label!r}"))
            out.extend(_unrunnable(cat, origin, loc, entry, faulty))
    return out


def _unrunnable(cat: Catalog, origin: Origin, loc: Loc, entry: SweepEntry,
                faulty: set[str]) -> list[Problem]:
    """The recipes of an entry that none of its fleets can run, by name.

    An exact id is always named; a glob's recipe only when a fleet with its hardware exists
    (``runners: [h200-dgx]`` with ``recipes: ["*"]`` means the H200 ones). Hardware with no
    fleet at all is a warning of its own (``catalog_warnings``): a new GPU awaiting its fleet.
    A recipe with problems of its own (``faulty``) is reported there only.
    """
    if any(kind == "fleet" for kind, _ in cat.broken):
        return []  # one of them might: its own problem is reported already
    labels = [r for r in entry.runners or ["*"] if r == "*" or r in cat.fleets]
    candidates = list(cat.fleets) if "*" in labels else labels
    out = []
    for rid in entry_recipes(cat, entry):
        recipe = cat.recipes[rid]
        if recipe.hardware not in cat.hardware or rid in faulty:
            continue
        exact = rid in entry.recipes
        if not exact and not any(cat.fleets[lb].hardware == recipe.hardware for lb in candidates):
            continue
        reasons = [why for lb in candidates if (why := fleet_fits(cat, recipe, lb)) is not None]
        if len(reasons) == len(candidates):
            same_hw = [w for lb, w in zip(candidates, reasons, strict=True)
                       if cat.fleets[lb].hardware == recipe.hardware]
            why = f": {same_hw[0]}" if same_hw else ""
            out.append(origin.problem((*loc, "recipes"), f"no runner fleet can run {rid} "
                                      f"({recipe.total_gpus} {recipe.hardware} GPUs){why}"))
    return out


def catalog_warnings(cat: Catalog) -> list[Problem]:
    """Not errors, but a plan would quietly leave these out: hardware that recipes use and
    no fleet has."""
    fleet_hw = {f.hardware for f in cat.fleets.values()}
    used: dict[str, list[str]] = {}
    for rid, recipe in cat.recipes.items():
        if recipe.hardware in cat.hardware and recipe.hardware not in fleet_hw:
            used.setdefault(recipe.hardware, []).append(rid)
    out = []
    for hw, rids in used.items():
        shown = ", ".join(rids[:3]) + (f" and {len(rids) - 3} more" if len(rids) > 3 else "")
        out.append(cat.origin("hardware", hw).problem((), f"no fleet in runners/fleets.yaml has "
                                                      f"{hw}: its recipes plan no jobs ({shown})"))
    return out


def _workload_problems(cat: Catalog) -> list[Problem]:
    """An agentic workload's trace file must exist (paths are relative to the catalog root)."""
    out = []
    for name, wl in cat.workloads.items():
        ses = wl.sessions
        if ses is not None and ses.path and not (cat.root / ses.path).is_file():
            out.append(cat.origin("workload", name).problem(
                ("sessions", "path"), f"no such file: {ses.path} (relative to the catalog root)"))
    return out


# built-in hardware profiles ship with the simulator (infermatrix/sim/profiles.py reads them);
# the catalog only checks that the file a `profile:` names is there
BUILTIN_PROFILES = Path(__file__).resolve().parents[1] / "sim" / "data" / "profiles"


def _hardware_problems(cat: Catalog) -> list[Problem]:
    out = []
    for name, hw in cat.hardware.items():
        if not hw.profile:
            continue
        builtin = BUILTIN_PROFILES / f"{hw.profile}.json"
        given = Path(hw.profile) if Path(hw.profile).is_absolute() else cat.root / hw.profile
        if not (("/" not in hw.profile and builtin.is_file()) or given.is_file()):
            out.append(cat.origin("hardware", name).problem(
                ("profile",), f"no profile {hw.profile!r}: neither a built-in one "
                f"(infermatrix/sim/data/profiles/) nor a file under the catalog root"))
    return out


def cross_validate(cat: Catalog) -> list[Problem]:
    problems: list[Problem] = []
    problems.extend(_hardware_problems(cat))
    problems.extend(_workload_problems(cat))
    faulty = set()
    for rid, recipe in cat.recipes.items():
        own = _recipe_problems(cat, rid, recipe)
        problems.extend(own)
        faulty.update([rid] if own else [])
    problems.extend(_fleet_problems(cat))
    problems.extend(_sweep_problems(cat, faulty))
    return problems
