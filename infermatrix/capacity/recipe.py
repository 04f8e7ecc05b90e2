"""A recipe's facts for the capacity search: what to divide by (every pool's GPUs, $/hour),
which affinity its router reads, and a simulated deployment of it to search against."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..catalog.loader import Catalog
from ..client.affinity import Affinity, for_router
from ..launch.backends.base import Launched
from ..launch.deploy import start_sim
from ..launch.readiness import wait_ready
from .normalise import Deployment

READY_TIMEOUT_S = 120.0


def deployment_of(cat: Catalog, recipe_id: str) -> Deployment:
    recipe = cat.recipes[recipe_id]
    return Deployment(
        gpus=recipe.total_gpus, usd_per_gpu_hour=cat.hardware[recipe.hardware].usd_per_gpu_hour
    )


def affinity_of(cat: Catalog, recipe_id: str) -> Affinity:
    router = cat.recipes[recipe_id].router
    return for_router(router.name if router else None)


def identity(cat: Catalog | None, recipe_id: str | None, workload: str | None, *,
             simulated: bool, **extra: Any) -> dict[str, Any]:
    """The document's ``infermatrix`` block: what was searched, and whether it was simulated."""
    ident: dict[str, Any] = {"simulated": simulated, "workload": workload or "agentic", **extra}
    if cat is not None and recipe_id:
        r = cat.recipes[recipe_id]
        ident.update(recipe=recipe_id, model=r.model, hardware=r.hardware, engine=r.engine.name,
                     precision=r.precision, mode=r.topology.mode)
    return {"infermatrix": ident}


@contextmanager
def simulated(
    cat: Catalog, recipe_id: str, log_dir: Path, time_scale: float = 1.0
) -> Iterator[Launched]:
    """The simulated engine standing in for ``recipe_id``, ready to serve; stopped on exit."""
    launched = start_sim(
        cat, recipe_id, log_dir, ["--time-scale", str(time_scale), "--log-level", "WARNING"]
    )
    try:
        wait_ready(
            launched.health_urls,
            launched.base_url,
            launched.canary,
            launched.procs,
            READY_TIMEOUT_S,
        )
        yield launched
    finally:
        launched.stop()
