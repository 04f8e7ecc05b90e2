"""Render a recipe into the exact processes that serve it (pure: no I/O, nothing started).

    from infermatrix.engines import render, shell_command, docker_argv
    dep = render(catalog, "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d",
                 placeholders={"MODEL": "/models/dsv32", "NODE_0": "10.0.0.1", ...})
    for proc in dep.processes:  # workers first, then the router
        print(shell_command(proc))

Placement: instances take consecutive GPUs of an ``Allocation`` in pool order (TensorRT-LLM's
gen_yaml.py rule). Without one, nodes are the placeholders ``${NODE_0}``, ``${NODE_1}``, …
of the hardware's size, for the caller to bind. See docs/recipes.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ..catalog.hostlist import Allocation, Demand, HostlistError, place
from ..catalog.loader import Catalog
from ..catalog.schema import Recipe
from . import sglang, trtllm, vllm
from .base import Collected, Worker, as_port, container_spec
from .deployment import (
    Canary,
    ContainerSpec,
    Deployment,
    FrontDoor,
    MpiLaunch,
    Process,
    docker_argv,
    env_argv,
    export_lines,
    join,
    quote,
    shell_command,
    srun_argv,
)
from .flags import RenderError, scalar_text, substitute
from .routers import RouterContext, Upstream, render_router

__all__ = [
    "Allocation", "Canary", "ContainerSpec", "Deployment", "FrontDoor", "MpiLaunch", "Process",
    "RenderError", "docker_argv", "env_argv", "export_lines", "join", "quote", "render", "render_recipe", "shell_command", "srun_argv",
]

ENGINES: dict[str, Callable[[Worker], list[Process]]] = {
    "vllm": vllm.worker,
    "sglang": sglang.worker,
    "trtllm": trtllm.worker,
}
# Instance ports when a recipe fixes none and several servers sit behind a router (gen_yaml.py).
BASE_PORT = 8001
DEFAULT_BOOTSTRAP_PORT = 8998  # SGLang's default
DEFAULT_DIST_INIT_PORT = 5000
CANARY_PROMPT = "Hello"


def default_allocation(recipe: Recipe, gpus_per_node: int) -> Allocation:
    nodes = max(1, math.ceil(recipe.total_gpus / gpus_per_node))
    return Allocation.uniform([f"${{NODE_{i}}}" for i in range(nodes)], gpus_per_node)


def render(catalog: Catalog, recipe_id: str, *, placeholders: Mapping[str, str] | None = None,
           allocation: Allocation | None = None) -> Deployment:
    """Every process of ``recipe_id``: argv, env, config files, container, GPUs, ports."""
    if recipe_id not in catalog.recipes:
        raise RenderError(f"unknown recipe {recipe_id!r}")
    recipe = catalog.recipes[recipe_id]
    return render_recipe(catalog, recipe_id, recipe, placeholders=placeholders, allocation=allocation)


def render_recipe(catalog: Catalog, recipe_id: str, recipe: Recipe, *,
                  placeholders: Mapping[str, str] | None = None,
                  allocation: Allocation | None = None) -> Deployment:
    hw = catalog.hardware[recipe.hardware]
    bindings = {k: scalar_text(v) for k, v in recipe.params.items()}
    bindings.update(placeholders or {})
    if allocation is not None:  # ${NODE_i} in args/env name the allocation's nodes
        bindings = {**{f"NODE_{i}": n for i, n in enumerate(allocation.nodes)}, **bindings}
    alloc = allocation or default_allocation(recipe, hw.gpus_per_node)
    alloc = Allocation(tuple(substitute(n, bindings) for n in alloc.nodes), alloc.tasks)
    pools = recipe.topology.pools
    try:
        places = place([Demand(p.role, p.instances, p.parallel.gpus) for p in pools], alloc, BASE_PORT)
    except HostlistError as exc:
        raise RenderError(f"{recipe_id}: {exc}") from None
    tasks_of = dict(zip(alloc.nodes, alloc.tasks, strict=True))
    lone = len(places) == 1 and recipe.router is None  # the server is the front door
    render_worker = ENGINES[recipe.engine.name]
    engine_names = {"MODEL", "PORT", *(f"NODE_{i}" for i in range(len(alloc.nodes)))}
    seen = Collected(frozenset((recipe.placeholders() | engine_names) - set(bindings)))
    workers: list[Process] = []
    upstreams: list[Upstream] = []
    for pl in places:
        pool = pools[pl.pool]
        port: int | str = (pool.port + pl.instance if pool.port else "${PORT}" if lone else pl.port)
        bootstrap = (pool.bootstrap_port or DEFAULT_BOOTSTRAP_PORT) + pl.instance
        w = Worker(
            recipe_id=recipe_id, recipe=recipe, hardware=hw, pool=pool, pool_index=pl.pool,
            instance=pl.instance, hosts=pl.hosts, gpus=pl.gpus,
            node_gpus=tuple(tasks_of[h] for h in pl.hosts), port=as_port(substitute(port, bindings)),
            bindings=bindings, bootstrap_port=bootstrap,
            dist_init_port=(pool.dist_init_port or DEFAULT_DIST_INIT_PORT) + pl.instance,
        )
        procs = [seen.add(p) for p in render_worker(w)]
        workers.extend(procs)
        head = procs[0]
        upstreams.append(Upstream(pool.role, pl.instance, pl.hosts[0], head.port or port,
                                  bootstrap if pool.role == "prefill" else None))
    processes = list(workers)
    if recipe.router is not None:
        ctx = RouterContext(
            recipe_id=recipe_id, recipe=recipe, router=recipe.router, host=alloc.nodes[0],
            port=as_port(substitute(recipe.router.port or "${PORT}", bindings)), upstreams=tuple(upstreams),
            bindings=bindings,
            container=container_spec(recipe, hw, (), 0, bindings),
        )
        processes.append(seen.add(render_router(ctx)))
        door = processes[-1]
        bind = recipe.router.host
    else:
        door = workers[0]
        bind = None
    door_host = bind if bind and bind != "0.0.0.0" else door.host
    front = FrontDoor(door_host, door.port if door.port is not None else "${PORT}")
    served = served_model(catalog, recipe, workers[0], bindings)
    canary = Canary("/v1/completions", {"model": served, "prompt": CANARY_PROMPT, "max_tokens": 4})
    return Deployment(recipe_id, tuple(processes), front, canary, served, frozenset(seen.names))


def served_model(catalog: Catalog, recipe: Recipe, worker: Process, bindings: Mapping[str, str]) -> str:
    """The name requests must use: --served-model-name if given, else what MODEL is bound to,
    else the checkpoint."""
    argv = list(worker.argv)
    for i, tok in enumerate(argv):
        if tok == "--served-model-name" and i + 1 < len(argv):
            return argv[i + 1]
        if tok.startswith("--served-model-name="):
            return tok.split("=", 1)[1]
    return bindings.get("MODEL") or catalog.checkpoint(recipe)
