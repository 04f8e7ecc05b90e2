"""Local backend: every process of the deployment is a subprocess of this machine."""

from __future__ import annotations

from ...engines import Process, render
from ..deploy import free_port
from .base import (
    LaunchContext,
    Launched,
    canary_of,
    endpoints,
    local_tokenizer,
    monitor_prefix,
    one_node,
    replace_prefix,
    spawn,
    start_each,
    with_env,
    write_files,
)

ADDRESS = "127.0.0.1"


def start(ctx: LaunchContext) -> Launched:
    dep = one_node(render(ctx.cat, ctx.job.recipe,
                          placeholders=ctx.bindings(PORT=str(free_port()), NODE_0=ADDRESS)),
                   ctx.job.recipe, "local")
    front, health, bases = endpoints(dep)
    launched = Launched([], front, health, dep.served_model, canary_of(dep), simulated=False,
                        engine=ctx.cat.recipes[ctx.job.recipe].engine.name, worker_urls=bases,
                        tokenizer=local_tokenizer(ctx.model), monitor_prefix=monitor_prefix(ctx))

    def start_one(proc: Process) -> None:
        proc = with_env(proc, ctx.fleet.env)
        workdir = write_files(proc, ctx.job_dir / "work" / proc.name)
        argv = replace_prefix(proc.argv, ctx.fleet.commands, ctx.resolve)
        spawn(launched, ctx, proc.name, argv, env=proc.env, cwd=workdir)

    return start_each(launched, dep.processes, start_one)
