"""Docker backend: one `docker run` per process on this node (host networking, as published).

The `docker run` client stays attached, so its exit is the container's exit and its output is
the server log. Containers are named ``<scope>-<process>`` and labelled with the run and job
ids; clean-up removes exactly those names, never "all containers of this runner".
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace

from ...engines import Process, docker_argv, render
from ..deploy import free_port
from .base import (
    LaunchContext,
    Launched,
    LaunchError,
    canary_of,
    checked_mounts,
    endpoints,
    monitor_prefix,
    one_node,
    spawn,
    start_each,
    with_env,
    write_files,
)

ADDRESS = "127.0.0.1"  # --network host: the servers listen on this node
# Passed through by name only (`-e NAME`), so the value never appears on a command line.
PASS_THROUGH_ENV = ("HF_TOKEN",)


def container_name(ctx: LaunchContext, proc: Process) -> str:
    return f"{ctx.scope}-{proc.name}"


def run_argv(ctx: LaunchContext, proc: Process) -> list[str]:
    """The exact `docker run` for one process: the engine's container spec plus this fleet's
    mounts, env, image mirror, labels, working folder for config files."""
    spec = proc.container
    if spec is None:
        raise LaunchError(f"{ctx.job.recipe}: the recipe names no container image "
                          "(engine.image); use --backend local or slurm")
    image = ctx.fleet.container_image.get(spec.image, spec.image)
    workdir = ctx.job_dir / "work" / proc.name
    own = [(str(workdir), str(workdir))] if proc.files else []
    mounts = checked_mounts(ctx, [*spec.mounts, *ctx.fleet.mounts.items(), *own])
    proc = replace(with_env(proc, ctx.fleet.env), container=replace(spec, image=image, mounts=mounts))
    extra = ["--rm", "--label", f"infermatrix.run={ctx.run_id}",
             "--label", f"infermatrix.job={ctx.job.id}"]
    if proc.files:
        extra += ["-w", str(workdir)]
    for name in PASS_THROUGH_ENV:
        if name in os.environ:
            extra += ["-e", name]
    # "--" last: the image (checked at load) can never be read as an option (--privileged)
    return docker_argv(proc, name=container_name(ctx, proc), detach=False, extra=[*extra, "--"])


def remove(names: list[str]) -> None:
    if names:
        subprocess.run(["docker", "rm", "-f", *names], capture_output=True, timeout=120, check=False)


def start(ctx: LaunchContext) -> Launched:
    dep = one_node(render(ctx.cat, ctx.job.recipe,
                          placeholders=ctx.bindings(PORT=str(free_port()), NODE_0=ADDRESS)),
                   ctx.job.recipe, "docker")
    front, health, bases = endpoints(dep)
    names = [container_name(ctx, p) for p in dep.processes]
    launched = Launched([], front, health, dep.served_model, canary_of(dep), simulated=False,
                        engine=ctx.cat.recipes[ctx.job.recipe].engine.name, worker_urls=bases,
                        cleanup=[lambda: remove(names)], monitor_prefix=monitor_prefix(ctx))
    remove(names)  # a stale container of an earlier attempt of this very job, if any

    def start_one(proc: Process) -> None:
        write_files(proc, ctx.job_dir / "work" / proc.name)
        spawn(launched, ctx, proc.name, run_argv(ctx, proc))

    return start_each(launched, dep.processes, start_one)
