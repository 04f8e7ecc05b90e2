"""SLURM across nodes: ``sbatch`` takes the nodes, then one ``srun`` per process runs on its node.

Node names are known only once the job starts, and engines render some of them into config
files (a TensorRT-LLM orchestrator's worker URLs), so the batch script does not carry the
commands. It writes its node list to ``nodes`` in the job folder (which must be on a
filesystem the nodes share, as the runner's workspace is on these clusters) and waits for
``launch.sh``; the runner renders the deployment with those nodes bound, exactly as the other
backends do, writes the config files and ``launch.sh`` (every value shlex-quoted), and the
batch script runs it: workers, then the router on the first node. The first process to exit
is named in ``exited`` and ends the job. Teardown is ``scancel`` of this job id.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from ...catalog.safety import CONTROL
from ...engines import Process, env_argv, join, quote, render
from ...engines.deployment import Canary
from .base import (
    LaunchContext,
    Launched,
    LaunchError,
    canary_of,
    check_bound,
    endpoints,
    monitor_prefix,
    node_placeholders,
    with_env,
    write_files,
)
from .slurm import PORT, allocation_options, monitor_step, scancel, squeue_field, step_argv

POLL_S = 1.0
NODES_TIMEOUT_S = 3600.0  # queue wait until the job starts
LAUNCH_WAIT_S = 600  # how long the batch script waits for the runner's launch.sh


def sbatch_directive(option: str) -> str:
    """One ``#SBATCH --name="value"`` line. sbatch reads a directive up to white space unless
    it is double-quoted, and the line ends at a newline: so the value is double-quoted and may
    hold no control character, quote or backslash (fleet values are checked at load; this
    refuses anything else, e.g. a job folder with a quote in its name)."""
    name, eq, value = option.partition("=")
    if CONTROL.search(option) or '"' in value or "\\" in value:
        raise LaunchError(f"cannot write {option[:80]!r} on an #SBATCH line: control character, "
                          "quote or backslash")
    return f'#SBATCH {name}="{value}"' if eq else f"#SBATCH {name}"


def batch_script(ctx: LaunchContext, nnodes: int) -> str:
    d = ctx.job_dir
    nodes, launch = quote(str(d / "nodes")), quote(str(d / "launch.sh"))
    options = [*allocation_options(ctx, nnodes), f"--output={d}/slurm-%j.log"]
    return "\n".join([
        "#!/bin/bash", *(sbatch_directive(o) for o in options), "set -euo pipefail",
        f'scontrol show hostnames "$SLURM_JOB_NODELIST" > {nodes}.tmp',
        f"mv {nodes}.tmp {nodes}",
        f"for _ in $(seq {LAUNCH_WAIT_S}); do",
        f"  if [ -f {launch} ]; then exec bash {launch}; fi",
        "  sleep 1",
        "done",
        f'echo "no launch.sh from the runner within {LAUNCH_WAIT_S} s" >&2',
        "exit 1", ""])


def launch_script(ctx: LaunchContext, procs: Sequence[Process]) -> str:
    d = ctx.job_dir
    lines = ["#!/bin/bash", "set -euo pipefail",
             "run() {  # run NAME CMD...: log to server-NAME.log, record the exit in 'exited'",
             '  local name="$1" rc=0; shift',
             f'  "$@" > {quote(str(d))}/"server-$name.log" 2>&1 || rc=$?',
             f'  echo "$name $rc" >> {quote(str(d / "exited"))}',
             "}"]
    for proc in procs:  # workers first, the router last (on the first node)
        lines.append(join(["run", proc.name, *env_argv(proc.env), *step_argv(ctx, proc)]) + " &")
    lines += ["wait -n || true  # the first process to exit ends the job", "exit 1", ""]
    return "\n".join(lines)


class BatchJob:
    def __init__(self, jobid: str, job_dir: Path):
        self.id, self.dir = jobid, job_dir
        self._checked, self._alive = 0.0, True

    def exit_code(self, name: str) -> int | None:
        exited = self.dir / "exited"
        if exited.exists():
            for line in exited.read_text().splitlines():
                who, _, code = line.partition(" ")
                if who == name:
                    return int(code) if code.strip().lstrip("-").isdigit() else 1
        return None if self.alive() else -1

    def alive(self) -> bool:
        if self._alive and time.monotonic() - self._checked > POLL_S:  # squeue at most 1/s
            self._checked = time.monotonic()
            self._alive = squeue_field(self.id, "%T") not in ("", "COMPLETED", "FAILED",
                                                              "CANCELLED", "TIMEOUT")
        return self._alive


class BatchStep:
    """One process of the batch job as a handle: exited once 'exited' names it, or when the
    SLURM job is gone (code -1)."""

    def __init__(self, name: str, job: BatchJob):
        self.name, self.job = name, job
        self.log_path = job.dir / f"server-{name}.log"

    def exit_code(self) -> int | None:
        return self.job.exit_code(self.name)

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:  # the job is cancelled as a whole by the clean-up step
        pass


def submit(path: Path) -> str:
    out = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True,
                         timeout=120, check=False)
    jobid = out.stdout.strip().split(";")[0]
    if out.returncode != 0 or not jobid.isdigit():
        raise LaunchError(f"sbatch failed (exit {out.returncode}): {out.stderr.strip()[-300:]}")
    return jobid


def wait_nodes(job: BatchJob, nnodes: int, timeout_s: float) -> list[str]:
    deadline = time.monotonic() + timeout_s
    path = job.dir / "nodes"
    while not path.exists():
        if not job.alive():
            raise LaunchError(f"SLURM job {job.id} ended before starting its servers; see "
                              f"{job.dir}/slurm-{job.id}.log")
        if time.monotonic() > deadline:
            raise LaunchError(f"SLURM job {job.id} did not start within {timeout_s:.0f} s")
        time.sleep(POLL_S)
    nodes = path.read_text().split()
    if len(nodes) < nnodes:
        raise LaunchError(f"SLURM job {job.id} got {len(nodes)} nodes, needs {nnodes}")
    return nodes


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # the batch script never runs half a file


def start(ctx: LaunchContext) -> Launched:
    nnodes = node_placeholders(render(ctx.cat, ctx.job.recipe, placeholders=ctx.bindings(PORT=PORT)))
    for stale in ("nodes", "exited", "launch.sh"):
        (ctx.job_dir / stale).unlink(missing_ok=True)
    # absolute, so an output folder named like an option ("-x") can never reach sbatch as one
    path = (ctx.job_dir / "job.sbatch").absolute()
    path.write_text(batch_script(ctx, nnodes))
    jobid = submit(path)
    ctx.log(f"  sbatch: job {jobid} ({nnodes} nodes)")
    job = BatchJob(jobid, ctx.job_dir)
    launched = Launched([], "", [], "", Canary("/v1/completions", {}), simulated=False,
                        engine=ctx.cat.recipes[ctx.job.recipe].engine.name,
                        cleanup=[lambda: scancel(jobid)],
                        commands=[["sbatch", "--parsable", str(path)]])
    try:
        nodes = wait_nodes(job, nnodes, NODES_TIMEOUT_S)
        ctx.log(f"  nodes: {','.join(nodes)}")
        dep = render(ctx.cat, ctx.job.recipe, placeholders=ctx.bindings(
            PORT=PORT, **{f"NODE_{i}": n for i, n in enumerate(nodes)}))
        check_bound(dep, ctx.job.recipe)
        procs = [with_env(p, ctx.fleet.env) for p in dep.processes]
        for proc in procs:
            write_files(proc, ctx.job_dir / "work" / proc.name)
        launched.commands += [step_argv(ctx, p) for p in procs]
        launched.base_url, launched.health_urls, launched.worker_urls = endpoints(dep)
        launched.served_model, launched.canary = dep.served_model, canary_of(dep)
        launched.monitor_prefix = monitor_prefix(ctx, monitor_step(jobid, nodes[0]))
        for proc in procs:
            step = BatchStep(proc.name, job)
            launched.procs.append(step)
            launched.log_paths.append(step.log_path)
        write_atomic(ctx.job_dir / "launch.sh", launch_script(ctx, procs))
    except BaseException:
        launched.stop()
        raise
    return launched
