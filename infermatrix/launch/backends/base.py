"""What every backend shares: the launch context, the running deployment, endpoints, naming.

A backend turns a rendered ``engines.Deployment`` into running processes on its kind of
cluster and returns a ``Launched``: handles it can poll and stop, the URLs to probe, and the
clean-up steps that remove exactly what this job created (named by run id and job id).
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from ...catalog.loader import Catalog
from ...catalog.safety import UnsafeValue, safe_mount
from ...catalog.schema import Fleet
from ...engines import Deployment as Rendered
from ...engines import Process
from ...engines.deployment import Canary
from ...engines.flags import scalar_text
from ...plan.jobs import Job


class LaunchError(Exception):
    """A deployment that cannot be started here (one line a person can act on)."""


class Handle(Protocol):
    """A started thing we can poll and stop: a local process, a `docker run`, an `srun` step."""

    name: str

    def exit_code(self) -> int | None: ...

    def tail(self, lines: int = 20) -> str: ...

    def stop(self) -> None: ...


@dataclass
class LaunchContext:
    cat: Catalog
    job: Job
    fleet_label: str
    fleet: Fleet
    run_id: str
    job_dir: Path
    model: str  # what ${MODEL} binds to
    timeout_minutes: int = 60
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)
    params: Mapping[str, str] = field(default_factory=dict)  # ${CONC}: plan.jobs.conc_params

    @property
    def scope(self) -> str:
        """Names everything this job creates (containers, SLURM jobs, pid files): the run id
        and a hash of the job id, so clean-up never matches a neighbour's work."""
        digest = hashlib.sha256(self.job.id.encode()).hexdigest()[:8]
        return safe_name(f"imx-{self.run_id}-{digest}")

    def resolve(self, token: str) -> str:
        """Fleet paths written ./x are relative to the catalog root (the repository)."""
        return str(self.cat.root / token[2:]) if token.startswith("./") else token

    def bindings(self, **more: str) -> dict[str, str]:
        """Placeholder values: the fleet's env (facts such as NETWORK_INTERFACE), ${MODEL},
        the loop's level bindings (${CONC}), then what the backend adds (PORT, NODE_i)."""
        out = {k: scalar_text(v) for k, v in self.fleet.env.items()}
        out["MODEL"] = self.model
        return {**out, **self.params, **more}

    @property
    def hardware_vendor(self) -> str:
        return self.cat.hardware[self.cat.recipes[self.job.recipe].hardware].vendor


@dataclass
class Launched:
    """A running deployment: what readiness, the sweep and teardown need."""

    procs: list[Handle]
    base_url: str
    health_urls: list[str]
    served_model: str
    canary: Canary
    simulated: bool
    engine: str = "sim"
    worker_urls: list[str] = field(default_factory=list)  # each server's base URL (drain, flush)
    log_paths: list[Path] = field(default_factory=list)
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    commands: list[list[str]] = field(default_factory=list)  # what was run, for the manifest
    tokenizer: str | None = None  # local tokenizer directory for the client, when known
    monitor_prefix: list[str] | None = None  # how to run the GPU sampler on the node; None: don't

    def stop(self) -> None:
        """Stop our processes (last started first), then run the backend's clean-up steps.
        Every step runs even if an earlier one fails."""
        errors: list[str] = []
        for proc in reversed(self.procs):
            try:
                proc.stop()
            except Exception as exc:  # keep tearing down the rest
                errors.append(f"{proc.name}: {exc}")
        for step in self.cleanup:
            try:
                step()
            except Exception as exc:
                errors.append(str(exc))
        if errors:
            print("teardown: " + "; ".join(errors), file=sys.stderr)

    def dead(self) -> Handle | None:
        return next((p for p in self.procs if p.exit_code() is not None), None)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str) -> str:
    """A docker/SLURM-safe name: [A-Za-z0-9_.-], starting with an alphanumeric."""
    return _UNSAFE.sub("-", text).strip("-.") or "imx"


def url_host(host: str) -> str:
    """Where to reach a server that listens on ``host`` (0.0.0.0 means: this machine)."""
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else host


def endpoints(dep: Rendered, address: Callable[[str], str] = url_host) -> tuple[str, list[str], list[str]]:
    """(front-door base URL, every server's health URL — the router's last —, every worker's
    base URL). The router is reached where the front door says (it may bind one address only)."""
    door = dep.front_door
    front = f"http://{address(door.host)}:{door.port}"
    health, bases, last = [], [], []
    for proc in dep.processes:
        if proc.port is None or proc.health_path is None:
            continue  # non-head ranks of a multi-node instance serve nothing themselves
        if proc.role == "router":
            last.append(front + proc.health_path)
            continue
        base = f"http://{address(proc.host)}:{proc.port}"
        health.append(base + proc.health_path)
        bases.append(base)
    return front, health + last, bases


def node_placeholders(dep: Rendered) -> int:
    """How many nodes a deployment rendered without node bindings spans (${NODE_i} it uses)."""
    return len({n for n in dep.unbound if re.fullmatch(r"NODE_\d+", n)})


def check_bound(dep: Rendered, where: str, allowed: Set[str] = frozenset()) -> None:
    """Every ${NAME} must be bound by now (but ``allowed``, bound later by a script)."""
    left = dep.unbound - allowed
    if left:
        raise LaunchError(f"{where}: placeholders left unbound: {', '.join(sorted(left))} "
                          "(give them in the recipe's params)")


def replace_prefix(argv: Sequence[str], commands: Mapping[str, list[str]],
                   resolve: Callable[[str], str]) -> list[str]:
    """Apply the fleet's ``commands``: the longest matching argv prefix is replaced."""
    for prefix in sorted(commands, key=lambda p: -len(p.split())):
        words = prefix.split()
        if list(argv[: len(words)]) == words:
            return [resolve(t) for t in commands[prefix]] + list(argv[len(words):])
    return list(argv)


def checked_mounts(ctx: LaunchContext, mounts: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Mounts with their placeholders bound, each path checked again: a bound value (a recipe
    param, a fleet env) with ',' or ':' would add a mount of its own (/data,/:/hostroot)."""
    try:
        for host, ctr in mounts:
            safe_mount(host, "mount host path")
            safe_mount(ctr, "mount container path")
    except UnsafeValue as exc:
        raise LaunchError(f"{ctx.job.recipe} on fleet {ctx.fleet_label}: {exc}") from None
    return tuple(mounts)


def with_env(proc: Process, env: Mapping[str, object]) -> Process:
    """The process with the fleet's env underneath its own (the recipe wins)."""
    return replace(proc, env={**{k: str(v) for k, v in env.items()}, **proc.env})


def write_files(proc: Process, workdir: Path) -> Path:
    """Config files a process reads (TensorRT-LLM YAML, …) go in its own working folder."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name, text in proc.files.items():
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return workdir


def monitor_prefix(ctx: LaunchContext, prefix: Sequence[str] = ()) -> list[str] | None:
    """How the GPU sampler runs on the deployment's (first) node; None when there is none."""
    from ..monitor import sampler_argv

    return list(prefix) if sampler_argv(ctx.hardware_vendor) else None


def local_tokenizer(model: str) -> str | None:
    """The checkpoint's own tokenizer for the client, when the model is a local folder."""
    return model if (Path(model) / "tokenizer.json").is_file() else None


def one_node(dep: Rendered, where: str, backend: str) -> Rendered:
    """Refuse a deployment that spans nodes (local and docker run on this machine only), and
    any MPI launch (those need srun)."""
    if dep.unbound & {f"NODE_{i}" for i in range(1, 64)}:
        raise LaunchError(f"{where}: needs several nodes; the {backend} backend runs on one "
                          "(use a slurm or ssh fleet)")
    for proc in dep.processes:
        if proc.mpi is not None:
            raise LaunchError(f"{where}: {proc.name} is an MPI launch across nodes; it needs "
                              "the slurm backend")
    check_bound(dep, where)
    return dep


def spawn(launched: Launched, ctx: LaunchContext, name: str, argv: list[str],
          env: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
    """Start one process this job owns, logged to server-<name>.log in the job folder."""
    from ..process import ManagedProcess

    log = ctx.job_dir / f"server-{name}.log"
    launched.commands.append(argv)
    launched.log_paths.append(log)
    launched.procs.append(ManagedProcess(name, argv, log, env=env, cwd=cwd))


def start_each(launched: Launched, procs: Sequence[Process],
               start_one: Callable[[Process], None]) -> Launched:
    """Start every process in order; if one cannot start, stop what already runs."""
    try:
        for proc in procs:
            start_one(proc)
    except BaseException:
        launched.stop()
        raise
    return launched


def canary_of(dep: Rendered) -> Canary:
    return dep.canary
