"""Backends: how a rendered deployment's processes are started on one kind of cluster.

Each module has ``start(ctx) -> Launched`` (SLURM: ``slurm.start_one_node`` for one node,
``sbatch.start`` for several, chosen here); the kind comes from the fleet (runners/fleets.yaml)
unless ``infermatrix run --backend`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import LaunchContext, Launched, LaunchError

BACKENDS = ("local", "docker", "slurm", "ssh")


def starter(kind: str) -> Callable[[LaunchContext], Launched]:
    if kind == "local":
        from .local import start
    elif kind == "docker":
        from .docker import start
    elif kind == "slurm":
        return _slurm
    elif kind == "ssh":
        from .ssh import start
    else:
        raise LaunchError(f"unknown backend {kind!r} (one of {', '.join(BACKENDS)})")
    return start


def _slurm(ctx: LaunchContext) -> Launched:
    """One node: salloc + srun steps (slurm.py); several: one sbatch script (sbatch.py, which
    builds on slurm.py: the choice lives here so neither imports the other both ways)."""
    from . import sbatch, slurm

    if slurm.node_count(ctx) > 1:
        slurm.require_tools(ctx, slurm.BATCH_TOOLS)
        return sbatch.start(ctx)
    slurm.require_tools(ctx, slurm.ONE_NODE_TOOLS)
    return slurm.start_one_node(ctx)


__all__ = ["BACKENDS", "LaunchContext", "LaunchError", "Launched", "starter"]
