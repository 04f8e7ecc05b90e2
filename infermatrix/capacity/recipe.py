"""A recipe's facts for the capacity search: what to divide by (every pool's GPUs, $/hour),
which affinity its router reads, and the identity block of its capacity document."""

from __future__ import annotations

from typing import Any

from ..catalog.loader import Catalog
from ..client.affinity import Affinity, for_router
from .normalise import Footprint

CAPACITY_KIND = "capacity-result"  # beside "level-result" and "eval-result"


def footprint_of(cat: Catalog, recipe_id: str) -> Footprint:
    recipe = cat.recipes[recipe_id]
    return Footprint(
        gpus=recipe.total_gpus, usd_per_gpu_hour=cat.hardware[recipe.hardware].usd_per_gpu_hour
    )


def affinity_of(cat: Catalog, recipe_id: str) -> Affinity:
    router = cat.recipes[recipe_id].router
    return for_router(router.name if router else None)


def identity(cat: Catalog | None, recipe_id: str | None, workload: str | None, *,
             simulated: bool, **extra: Any) -> dict[str, Any]:
    """The document's ``infermatrix`` block: what was searched, and whether it was simulated.
    ``kind`` marks it as a level result's block and an eval document are marked."""
    ident: dict[str, Any] = {"kind": CAPACITY_KIND, "simulated": simulated,
                             "workload": workload or "agentic", **extra}
    if cat is not None and recipe_id:
        r = cat.recipes[recipe_id]
        ident.update(recipe=recipe_id, model=r.model, hardware=r.hardware, engine=r.engine.name,
                     precision=r.precision, mode=r.topology.mode)
    return {"infermatrix": ident}
