"""What rendering a recipe produces: processes with exact argv, env, files and container.

Nothing here runs anything. ``infermatrix.launch`` turns a ``Deployment`` into running
processes (locally, under docker or srun); ``shell_command`` / ``docker_argv`` / ``srun_argv``
give the same thing as text for people and the catalog page.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..catalog.placeholders import BRACED
from .flags import DOCKER, render_flag

Role = Literal["both", "prefill", "decode", "router"]



@dataclass(frozen=True)
class ContainerSpec:
    """A docker invocation; ``docker_argv`` renders it around a process's argv."""

    image: str
    gpus: str | None = None  # NVIDIA: docker --gpus value
    devices: tuple[str, ...] = ()
    detach: bool = False
    shm_size: str | None = None
    ipc: str | None = None
    network: str | None = None
    privileged: bool = False
    mounts: tuple[tuple[str, str], ...] = ()
    equals: frozenset[str] = frozenset()  # docker options written --option=value


@dataclass(frozen=True)
class MpiLaunch:
    """A process that is one MPI job over several nodes (TensorRT-LLM multi-node workers)."""

    ntasks: int
    ntasks_per_node: int
    hosts: tuple[str, ...]
    wrapper: tuple[str, ...] = ()  # e.g. trtllm-llmapi-launch, between srun and argv


@dataclass(frozen=True)
class Process:
    name: str  # unique in the deployment: "prefill-0", "decode-0-node-1", "router"
    role: Role
    instance: int
    node_rank: int
    nnodes: int
    host: str  # address of the node it runs on (a ${NODE_i} placeholder until placed)
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # name (relative to cwd) -> text
    container: ContainerSpec | None = None
    gpus: tuple[int, ...] = ()  # device indices on its node
    port: int | str | None = None  # str only while it is an unbound ${PLACEHOLDER}
    health_path: str | None = "/health"
    mpi: MpiLaunch | None = None
    # ${NAME}s left for the caller to bind; only these expand in shell_command's output
    placeholders: frozenset[str] = frozenset()


@dataclass(frozen=True)
class FrontDoor:
    """Where clients send requests. A router bound to loopback (the Ascend seed's
    ``--host 127.0.0.1``) is reached from its own node: run the client there."""

    host: str
    port: int | str
    path: str = "/v1"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"


@dataclass(frozen=True)
class Canary:
    """One small generation through the front door: proof that the deployment serves."""

    path: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Deployment:
    recipe_id: str
    processes: tuple[Process, ...]  # start in this order (workers, then the router)
    front_door: FrontDoor
    canary: Canary
    served_model: str
    unbound: frozenset[str] = frozenset()  # placeholders still to bind (MODEL, PORT, NODE_0…)

    def by_role(self, role: Role) -> list[Process]:
        return [p for p in self.processes if p.role == role]

    def process(self, name: str) -> Process:
        return next(p for p in self.processes if p.name == name)

    @property
    def workers(self) -> list[Process]:
        return [p for p in self.processes if p.role != "router"]

    @property
    def router(self) -> Process | None:
        return next((p for p in self.processes if p.role == "router"), None)


# --------------------------------------------------------------------------- as shell text


def quote(token: str, expand: Collection[str] = ()) -> str:
    """shlex.quote, except that the placeholders named in ``expand`` stay expandable, inside
    double quotes so their values are never re-parsed: ``--port "${PORT}"``. Nothing else
    can expand, including a ``${X}`` that arrived inside a bound value."""
    parts = [p for p in BRACED.split(token) if p]
    if not parts:
        return "''"
    return "".join(f'"{p}"' if BRACED.fullmatch(p) and p[2:-1] in expand else shlex.quote(p)
                   for p in parts)


def join(argv: Sequence[str], expand: Collection[str] = ()) -> str:
    return " ".join(quote(t, expand) for t in argv)


def export_lines(env: Mapping[str, str], expand: Collection[str] = ()) -> list[str]:
    """``export NAME=VALUE`` lines, every word quoted (names are checked at load; quoting them
    too means no name can ever end the line early)."""
    return [f"export {quote(k)}={quote(v, expand)}" for k, v in env.items()]


def env_argv(env: Mapping[str, str]) -> list[str]:
    """``env -- NAME=VALUE ...`` before a command (nothing when there is no env): the ``--`` ends
    env's options, so no name can be read as one (GNU env's ``-S`` runs its argument)."""
    return ["env", "--", *(f"{k}={v}" for k, v in env.items())] if env else []


def shell_command(process: Process, *, docker: bool = False) -> str:
    """The process as shell: ``export`` lines then the command, or one ``docker run`` line."""
    names = process.placeholders
    if docker:
        return join(docker_argv(process), names)
    lines = export_lines(process.env, names)
    argv = srun_argv(process) if process.mpi else list(process.argv)
    lines.append(join(argv, names))
    return "\n".join(lines)


def docker_argv(process: Process, *, name: str | None = None, detach: bool | None = None,
                extra: Sequence[str] = ()) -> list[str]:
    """``docker run …`` for a process: devices, shm, ipc, network, mounts, ``-e`` env, image."""
    c = process.container
    if c is None:
        raise ValueError(f"{process.name}: the recipe names no container image")

    def opt(key: str, value: Any) -> list[str]:
        return render_flag(key + ("=" if key in c.equals else ""), value, DOCKER)

    argv = ["docker", "run"]
    if c.detach if detach is None else detach:
        argv.append("-d")
    if name:
        argv += ["--name", name]
    argv += opt("gpus", c.gpus) + opt("device", list(c.devices))
    argv += opt("shm-size", c.shm_size) + opt("ipc", c.ipc) + opt("network", c.network)
    argv += opt("privileged", c.privileged)
    for host_path, ctr_path in c.mounts:
        argv += ["-v", f"{host_path}:{ctr_path}"]
    for k, v in process.env.items():
        argv += ["-e", f"{k}={v}"]
    return [*argv, *extra, c.image, *process.argv]


def srun_argv(process: Process, *, extra: Sequence[str] = ()) -> list[str]:
    """``srun`` over the process's nodes, one task per GPU (the MPI ranks)."""
    m = process.mpi
    if m is None:
        return list(process.argv)
    return ["srun", "--nodes", str(len(m.hosts)), "--ntasks", str(m.ntasks),
            "--ntasks-per-node", str(m.ntasks_per_node), "--nodelist", ",".join(m.hosts),
            "--mpi", "pmix", *extra, "--", *m.wrapper, *process.argv]
