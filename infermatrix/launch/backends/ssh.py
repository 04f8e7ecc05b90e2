"""SSH backend: fleets of fixed hosts with no scheduler (the Ascend A3 deployment).

``${NODE_i}`` is the fleet's i-th host. Each process runs as ``ssh -- HOST <command>`` with the
client attached, so its output is the log and its exit is the process's exit. The remote shell
writes its pid to a file named by the run scope, then ``exec``s the server, which keeps that
pid and leads its process group (sshd starts each command in a new session); teardown kills
exactly those groups, host by host, and nothing else.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections import defaultdict

from ...catalog.safety import UnsafeValue, safe_host
from ...engines import Process, env_argv, render
from .base import (
    LaunchContext,
    Launched,
    LaunchError,
    canary_of,
    check_bound,
    endpoints,
    monitor_prefix,
    spawn,
    start_each,
    with_env,
)

PORT = "8000"
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ServerAliveInterval=15")
STOP_GRACE_S = 10


def ssh_argv(ctx: LaunchContext, host: str, remote: str) -> list[str]:
    """``ssh OPTIONS -- HOST REMOTE``: the ``--`` ends ssh's options before the host, so no
    host (already checked at load) can ever be read as one (``-oProxyCommand=...``)."""
    try:
        safe_host(host)
    except UnsafeValue as exc:
        raise LaunchError(f"fleet {ctx.fleet_label}: {exc}") from None
    user = ["-l", ctx.fleet.ssh_user] if ctx.fleet.ssh_user else []
    return ["ssh", *SSH_OPTIONS, *user, "--", host, remote]


def remote_dir(ctx: LaunchContext) -> str:
    base = ctx.fleet.workdir or "/tmp"
    return f"{base.rstrip('/')}/{ctx.scope}"


def pid_file(ctx: LaunchContext, proc: Process) -> str:
    return f"{remote_dir(ctx)}/{proc.name}.pid"


def remote_command(ctx: LaunchContext, proc: Process) -> str:
    """One line of shell for the remote side; every value is shlex-quoted."""
    q = shlex.quote
    work = f"{remote_dir(ctx)}/{proc.name}"
    parts = [f"mkdir -p {q(work)}", f"cd {q(work)}"]
    for name, text in proc.files.items():
        parts.append(f"printf '%s' {q(text)} > {q(name)}")
    parts.append(f"echo $$ > {q(pid_file(ctx, proc))}")
    parts.append("exec " + shlex.join([*env_argv(proc.env), *proc.argv]))
    return " && ".join(parts)


def signal_command(pid_files: list[str], sig: str) -> str:
    """Signal each of our process groups; print 'alive' for each that was still there."""
    files = " ".join(shlex.quote(f) for f in pid_files)
    cleanup = ' rm -f "$f";' if sig == "KILL" else ""
    # `kill -SIG -PGID`, no `--`: dash (Debian's /bin/sh) reads `--` as a bad process id
    return (f'for f in {files}; do if [ -f "$f" ] && kill -{sig} "-$(cat "$f")" 2>/dev/null; '
            f"then echo alive; fi;{cleanup} done; true")


def start(ctx: LaunchContext) -> Launched:
    hosts = ctx.fleet.hosts
    if not hosts:
        raise LaunchError(f"fleet {ctx.fleet_label}: an ssh fleet needs its hosts listed")
    placeholders = ctx.bindings(PORT=PORT, **{f"NODE_{i}": h for i, h in enumerate(hosts)})
    dep = render(ctx.cat, ctx.job.recipe, placeholders=placeholders)
    if dep.unbound & {f"NODE_{i}" for i in range(64)}:
        raise LaunchError(f"{ctx.job.recipe}: needs more nodes than fleet {ctx.fleet_label}'s "
                          f"{len(hosts)} hosts")
    check_bound(dep, ctx.job.recipe)
    front, health, bases = endpoints(dep)
    by_host: dict[str, list[str]] = defaultdict(list)
    launched = Launched([], front, health, dep.served_model, canary_of(dep), simulated=False,
                        engine=ctx.cat.recipes[ctx.job.recipe].engine.name, worker_urls=bases,
                        monitor_prefix=monitor_prefix(ctx, ssh_argv(ctx, hosts[0], "")[:-1]))

    def signal_all(sig: str) -> bool:
        alive = False
        for host, files in by_host.items():
            out = subprocess.run(ssh_argv(ctx, host, signal_command(files, sig)),
                                 capture_output=True, text=True, timeout=60, check=False)
            alive |= "alive" in out.stdout
        return alive

    def teardown() -> None:  # TERM everywhere, one grace period, then KILL what is left
        if signal_all("TERM"):
            time.sleep(STOP_GRACE_S)
        signal_all("KILL")

    launched.cleanup.append(teardown)

    def start_one(proc: Process) -> None:
        proc = with_env(proc, ctx.fleet.env)
        by_host[proc.host].append(pid_file(ctx, proc))
        spawn(launched, ctx, proc.name, ssh_argv(ctx, proc.host, remote_command(ctx, proc)))

    for proc in dep.processes:
        if proc.mpi is not None:
            raise LaunchError(f"{proc.name}: MPI launches need the slurm backend")
    return start_each(launched, dep.processes, start_one)
