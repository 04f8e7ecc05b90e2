"""Backends: how a rendered deployment's processes are started on one kind of cluster.

Each module has ``start(ctx) -> Launched``; the kind comes from the fleet (runners/fleets.yaml)
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
        from .slurm import start
    elif kind == "ssh":
        from .ssh import start
    else:
        raise LaunchError(f"unknown backend {kind!r} (one of {', '.join(BACKENDS)})")
    return start


__all__ = ["BACKENDS", "LaunchContext", "LaunchError", "Launched", "starter"]
