"""SLURM allocations: expand ``SLURM_JOB_NODELIST`` / ``SLURM_TASKS_PER_NODE`` and place a
topology's instances on them the way TensorRT-LLM's gen_yaml.py does.

gen_yaml.py semantics: one task per GPU; instances take consecutive tasks in pool order;
an instance's URL is the host of its first task with a per-node port counter (8001, 8002, …);
the orchestrator runs on the first node.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class HostlistError(ValueError):
    """A malformed SLURM string or an allocation that cannot hold the topology."""


# --------------------------------------------------------------------------- expansion

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets: 'a[1-2,5],b' -> ['a[1-2,5]', 'b']."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested brackets in node list {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in node list {text!r}")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if depth:
        raise HostlistError(f"unclosed '[' in node list {text!r}")
    out.append(cur)
    return out


def _expand_ranges(spec: str, whole: str) -> list[str]:
    values: list[str] = []
    for part in spec.split(","):
        m = _RANGE.match(part.strip())
        if not m:
            raise HostlistError(f"bad range {part!r} in node list {whole!r}")
        lo, hi = m.group(1), m.group(2)
        if hi is None:
            values.append(lo)
            continue
        if int(hi) < int(lo):
            raise HostlistError(f"range {part!r} runs backwards in node list {whole!r}")
        width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
        values.extend(str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
    return values


def expand_nodelist(text: str) -> list[str]:
    """``gpu-[01-03,07],login1`` -> ``['gpu-01', 'gpu-02', 'gpu-03', 'gpu-07', 'login1']``.

    Zero padding follows the range's first number; several bracket groups in one name cross
    (``r[1-2]n[1-2]`` -> r1n1 r1n2 r2n1 r2n2), as ``scontrol show hostnames`` does.
    """
    text = text.strip()
    if not text:
        raise HostlistError("empty node list")
    hosts: list[str] = []
    for group in _split_top(text):
        if not group:
            raise HostlistError(f"empty host name in node list {text!r}")
        pieces = re.split(r"\[([^\]]*)\]", group)
        # pieces alternate literal, range spec, literal, …
        choices = [[p] if i % 2 == 0 else _expand_ranges(p, text) for i, p in enumerate(pieces)]
        hosts.extend("".join(c) for c in itertools.product(*choices))
    return hosts


def expand_tasks_per_node(text: str) -> list[int]:
    """``4(x3),2`` -> ``[4, 4, 4, 2]`` (SLURM_TASKS_PER_NODE)."""
    counts: list[int] = []
    for part in text.strip().split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            raise HostlistError(f"bad tasks-per-node entry {part!r} in {text!r}")
        counts.extend([int(m.group(1))] * int(m.group(2) or 1))
    return counts


def compress_tasks_per_node(counts: Sequence[int]) -> str:
    """Inverse of expand_tasks_per_node, run-length encoded as SLURM writes it."""
    runs = [(n, len(list(grp))) for n, grp in itertools.groupby(counts)]
    return ",".join(str(n) if k == 1 else f"{n}(x{k})" for n, k in runs)


# --------------------------------------------------------------------------- allocation


@dataclass(frozen=True)
class Allocation:
    """Nodes and the tasks (GPUs) each offers, in SLURM order."""

    nodes: tuple[str, ...]
    tasks: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.nodes) != len(self.tasks):
            raise HostlistError(f"{len(self.nodes)} nodes but tasks per node for {len(self.tasks)}")
        if len(set(self.nodes)) != len(self.nodes):
            raise HostlistError("a node appears twice in the node list")

    @classmethod
    def from_slurm(cls, nodelist: str, tasks_per_node: str) -> Allocation:
        nodes = expand_nodelist(nodelist)
        tasks = expand_tasks_per_node(tasks_per_node)
        if len(tasks) == 1 and len(nodes) > 1:  # SLURM may write one count for all nodes
            tasks = tasks * len(nodes)
        if len(tasks) != len(nodes):
            raise HostlistError(f"SLURM_TASKS_PER_NODE {tasks_per_node!r} gives {len(tasks)} "
                                f"nodes, SLURM_JOB_NODELIST {nodelist!r} has {len(nodes)}")
        return cls(tuple(nodes), tuple(tasks))

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Allocation:
        try:
            return cls.from_slurm(env["SLURM_JOB_NODELIST"], env["SLURM_TASKS_PER_NODE"])
        except KeyError as exc:
            raise HostlistError(f"{exc.args[0]} is not set: not inside a SLURM allocation") from None

    @classmethod
    def uniform(cls, nodes: Sequence[str], per_node: int) -> Allocation:
        return cls(tuple(nodes), tuple([per_node] * len(nodes)))

    @property
    def total(self) -> int:
        return sum(self.tasks)


@dataclass(frozen=True)
class Demand:
    """What one pool asks of the allocation."""

    role: str
    instances: int
    gpus: int  # per instance


@dataclass(frozen=True)
class InstancePlace:
    pool: int
    role: str
    instance: int
    hosts: tuple[str, ...]  # nodes the instance spans, first = its head
    gpus: tuple[tuple[int, ...], ...]  # device indices used on each of those nodes
    port: int  # gen_yaml-style per-node counter on the head node

    @property
    def nnodes(self) -> int:
        return len(self.hosts)


def place(demands: Sequence[Demand], alloc: Allocation, base_port: int = 8001) -> list[InstancePlace]:
    """Consecutive tasks per instance, pools in order (gen_yaml.py); clear error when short."""
    needed = sum(d.instances * d.gpus for d in demands)
    if needed > alloc.total:
        shape = ", ".join(f"{d.instances}×{d.gpus} {d.role}" for d in demands)
        raise HostlistError(f"the allocation ({len(alloc.nodes)} nodes, {alloc.total} tasks: "
                            f"{compress_tasks_per_node(alloc.tasks)}) cannot hold the topology "
                            f"({shape} = {needed} GPUs)")
    tasks = [(n, i) for n, count in enumerate(alloc.tasks) for i in range(count)]
    ports = [base_port] * len(alloc.nodes)
    out: list[InstancePlace] = []
    offset = 0
    for p, d in enumerate(demands):
        for k in range(d.instances):
            mine = tasks[offset:offset + d.gpus]
            offset += d.gpus
            nodes = sorted({n for n, _ in mine})
            head = mine[0][0]
            out.append(InstancePlace(
                pool=p, role=d.role, instance=k,
                hosts=tuple(alloc.nodes[n] for n in nodes),
                gpus=tuple(tuple(i for m, i in mine if m == n) for n in nodes),
                port=ports[head],
            ))
            ports[head] += 1
    return out
