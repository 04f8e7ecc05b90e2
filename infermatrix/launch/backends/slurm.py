"""SLURM backend. One node: ``salloc --no-shell`` takes the node, then one ``srun --jobid``
step per process runs from here (Pyxis/enroot container flags when the recipe has an image).
Several nodes (multi-node or disaggregated topologies): ``sbatch`` of a generated script that
starts one ``srun`` per worker process on its node and the router on the first node
(see sbatch.py). Either way clean-up is ``scancel`` of this job's own SLURM job id.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from ...catalog.hostlist import HostlistError, expand_nodelist
from ...engines import Process, render, srun_argv
from ..readiness import Canary
from .base import (
    LaunchContext,
    Launched,
    LaunchError,
    canary_of,
    check_bound,
    checked_mounts,
    endpoints,
    monitor_prefix,
    node_placeholders,
    spawn,
    start_each,
    with_env,
    write_files,
)

PORT = "8000"  # a lone server's port: the node is allocated to this job alone (--exclusive)
SALLOC_TIMEOUT_S = 3600.0


def allocation_options(ctx: LaunchContext, nodes: int) -> list[str]:
    """salloc/sbatch options, all from the fleet entry (never hard-coded per cluster)."""
    f = ctx.fleet
    opts = [f"--job-name={ctx.scope}", f"--nodes={nodes}", "--exclusive"]
    if f.partition:
        opts.append(f"--partition={f.partition}")
    if f.account:
        opts.append(f"--account={f.account}")
    if f.exclude_nodes:
        opts.append("--exclude=" + ",".join(f.exclude_nodes))
    opts.append(f"--time={f.time_limit_minutes or ctx.timeout_minutes}")
    if ctx.hardware_vendor != "cpu":
        opts.append(f"--gres=gpu:{f.gpus_per_node}")
    return [*opts, *f.slurm_args]


def container_options(ctx: LaunchContext, proc: Process) -> list[str]:
    """Pyxis flags for srun: image, mounts (recipe's then fleet's), container name, workdir."""
    spec = proc.container
    if spec is None:
        return []
    image = ctx.fleet.container_image.get(spec.image, spec.image)
    workdir = ctx.job_dir / "work" / proc.name
    own = [(str(workdir), str(workdir))] if proc.files else []
    mounts = dict(checked_mounts(ctx, [*spec.mounts, *ctx.fleet.mounts.items(), *own]))
    opts = [f"--container-image={image}", f"--container-name={ctx.scope}-{proc.name}",
            "--no-container-mount-home"]
    if mounts:
        opts.append("--container-mounts=" + ",".join(f"{h}:{c}" for h, c in mounts.items()))
    if proc.files:
        opts.append(f"--container-workdir={workdir}")
    return opts


def step_argv(ctx: LaunchContext, proc: Process, jobid: str | None = None) -> list[str]:
    """One srun step for a process: on its node, or over its nodes for an MPI launch."""
    own = [f"--jobid={jobid}"] if jobid else []
    if proc.files and proc.container is None:  # bare metal: run where its config files are
        own.append(f"--chdir={ctx.job_dir / 'work' / proc.name}")
    if proc.mpi is not None:
        return srun_argv(proc, extra=[*own, "--overlap", *container_options(ctx, proc)])
    return ["srun", *own, "--nodes=1", "--ntasks=1", f"--nodelist={proc.host}", "--overlap",
            *container_options(ctx, proc), "--", *proc.argv]


def monitor_step(jobid: str, node: str) -> list[str]:
    """srun prefix that runs the GPU sampler beside the servers on ``node``."""
    return ["srun", f"--jobid={jobid}", "--overlap", "--nodes=1", "--ntasks=1", f"--nodelist={node}"]


# The SLURM client tools each way of starting needs (squeue is optional: a fallback for
# the node list). Checked before anything is submitted, so a runner without them fails
# with one line naming the tool, not a clean-up's FileNotFoundError for scancel.
ONE_NODE_TOOLS = ("salloc", "srun", "scancel")
BATCH_TOOLS = ("sbatch", "srun", "scancel")


def require_tools(ctx: LaunchContext, tools: tuple[str, ...]) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise LaunchError(f"{', '.join(missing)}: not found on PATH; fleet {ctx.job.runner!r} "
                          f"is a SLURM fleet and this runner needs the SLURM client tools "
                          f"({', '.join(tools)})")


def scancel(*argv: str) -> None:
    try:
        subprocess.run(["scancel", *argv], capture_output=True, timeout=60, check=False)
    except OSError:
        pass  # clean-up must not hide the error that called it


def squeue_field(jobid: str, fmt: str) -> str:
    try:
        out = subprocess.run(["squeue", "-h", "-j", jobid, "-o", fmt], capture_output=True,
                             text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip()


def salloc(ctx: LaunchContext) -> tuple[str, list[str]]:
    """Take one node; return (SLURM job id, node names)."""
    argv = ["salloc", "--no-shell", *allocation_options(ctx, 1)]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=SALLOC_TIMEOUT_S,
                             check=False)
    except BaseException as exc:  # time-out or SIGTERM while queued: drop our pending request,
        scancel(f"--name={ctx.scope}")  # found by its run-scoped name
        if isinstance(exc, subprocess.TimeoutExpired):
            raise LaunchError(f"salloc: no node within {SALLOC_TIMEOUT_S:.0f} s") from None
        raise
    text = out.stdout + out.stderr
    granted = re.search(r"Granted job allocation (\d+)", text)
    if not granted:
        raise LaunchError(f"salloc failed (exit {out.returncode}): "
                          f"{text.strip().splitlines()[-1] if text.strip() else 'no output'}")
    jobid = granted.group(1)
    ready = re.search(r"Nodes (\S+) are ready", text)
    nodelist = ready.group(1) if ready else squeue_field(jobid, "%N")
    try:
        return jobid, expand_nodelist(nodelist)
    except HostlistError as exc:
        scancel(jobid)
        raise LaunchError(f"salloc job {jobid}: {exc}") from None


def node_count(ctx: LaunchContext) -> int:
    dep = render(ctx.cat, ctx.job.recipe, placeholders=ctx.bindings(PORT=PORT))
    return node_placeholders(dep)


def start_one_node(ctx: LaunchContext) -> Launched:
    jobid, nodes = salloc(ctx)
    ctx.log(f"  salloc: job {jobid} on {','.join(nodes)}")
    launched = Launched([], "", [], "", Canary("/v1/completions", {}), simulated=False,
                        engine=ctx.cat.recipes[ctx.job.recipe].engine.name,
                        cleanup=[lambda: scancel(jobid)])
    try:
        dep = render(ctx.cat, ctx.job.recipe, placeholders=ctx.bindings(PORT=PORT, NODE_0=nodes[0]))
        check_bound(dep, ctx.job.recipe)
    except BaseException:
        launched.stop()
        raise
    launched.base_url, launched.health_urls, launched.worker_urls = endpoints(dep)
    launched.served_model, launched.canary = dep.served_model, canary_of(dep)
    launched.monitor_prefix = monitor_prefix(ctx, monitor_step(jobid, nodes[0]))

    def start_one(proc: Process) -> None:
        proc = with_env(proc, ctx.fleet.env)
        write_files(proc, ctx.job_dir / "work" / proc.name)
        # srun exports this environment into the step (and Pyxis into the container)
        spawn(launched, ctx, proc.name, step_argv(ctx, proc, jobid), env=proc.env)

    return start_each(launched, dep.processes, start_one)
