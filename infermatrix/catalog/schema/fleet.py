"""The schema of runners/fleets.yaml: a pool of self-hosted runners of one kind of cluster."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ..safety import (
    AbsPath,
    Host,
    ImageRef,
    MountPath,
    NodeList,
    PathText,
    SlurmArg,
    SlurmName,
    Text,
    UserName,
)
from .field_types import MAX_SECONDS, Degree, EnvMap, Name, Strict


class Fleet(Strict):
    """A pool of self-hosted runners that share one label and one kind of cluster.

    Its values reach #SBATCH lines, ssh command lines and paths: each has a pattern (or at
    least no control character), checked here so no fleet can inject a command."""

    hardware: Name
    kind: Literal["docker", "slurm", "ssh", "local"]
    gpus_per_node: Annotated[int, Field(ge=1, le=1024)]
    nodes: Degree = 1
    partition: SlurmName | None = None
    account: SlurmName | None = None
    model_cache: PathText | None = None
    mounts: dict[MountPath, MountPath] = Field(default_factory=dict)
    env: EnvMap = Field(default_factory=dict)
    exclude_nodes: list[NodeList] = Field(default_factory=list)
    hosts: list[Host] = Field(default_factory=list)
    # How `infermatrix run` starts processes here (launch/): all optional, facts of the fleet.
    model_dir: PathText | None = Field(
        default=None, description="folder of checkpoints as plain directories: ${MODEL} is "
        "model_dir/<checkpoint>; unset: ${MODEL} is the HF id (resolved through the HF cache)")
    commands: dict[Text, list[Text]] = Field(
        default_factory=dict, description="argv prefixes replaced on this fleet, e.g. 'vllm serve' "
        "-> a CPU build's module entry point; tokens starting with ./ are relative to the repo")
    container_image: dict[ImageRef, ImageRef] = Field(
        default_factory=dict, description="engine image -> image to run instead (a local mirror, "
        "or a squashfs file for Pyxis/enroot)")
    slurm_args: list[SlurmArg] = Field(
        default_factory=list, description="extra salloc/sbatch options (--qos=..., --reservation=...)")
    time_limit_minutes: Annotated[int, Field(ge=1, le=int(MAX_SECONDS) // 60)] | None = Field(
        default=None, description="SLURM allocation time limit (default: the job's time-out)")
    ssh_user: UserName | None = None
    workdir: AbsPath | None = Field(
        default=None, description="ssh fleets: shared folder on the hosts for logs and files")

    @field_validator("commands")
    @classmethod
    def _commands_start_with_a_program(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for prefix, argv in v.items():
            if not argv or argv[0].startswith("-"):
                raise ValueError(f"{prefix!r}: the replacement starts with a program, not an option")
        return v

    @model_validator(mode="after")
    def _fields_fit_the_kind(self) -> Fleet:
        """What launching would otherwise find out on the cluster, or silently ignore."""
        if self.kind == "ssh" and len(self.hosts) < self.nodes:
            raise ValueError(f"an ssh fleet lists its hosts: {self.nodes} nodes, "
                             f"{len(self.hosts)} hosts")
        slurm_only = [n for n in ("partition", "account", "slurm_args", "exclude_nodes",
                                  "time_limit_minutes") if getattr(self, n)]
        if self.kind != "slurm" and slurm_only:
            raise ValueError(f"{', '.join(slurm_only)}: only for kind: slurm")
        ssh_only = [n for n in ("hosts", "ssh_user", "workdir") if getattr(self, n)]
        if self.kind != "ssh" and ssh_only:
            raise ValueError(f"{', '.join(ssh_only)}: only for kind: ssh")
        return self

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes
