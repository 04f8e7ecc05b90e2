"""What every engine renderer shares: the worker context and how derived flags meet ``args``.

An engine derives some flags from the schema (``Managed``: model, host, port, parallelism,
disaggregation, speculative decoding…). The recipe's ``args`` are rendered in their written
order; a derived flag the args do not name goes in front, in the engine's order. When the args
name a derived flag (so the seed's order is kept), the args value is used and, for modelled
facts (``strict``), must agree with the schema: ``--tp 4`` next to ``parallel: {tp: 8}`` is an
error, not a silent contradiction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..catalog.schema import Container, Hardware, Pool, Recipe, SpecDecode
from .deployment import ContainerSpec, Process
from .flags import RenderError, base_key, placeholders_in, scalar_text, substitute

# Visible-device variable per vendor: set when a process uses part of a node's accelerators.
VISIBLE_DEVICES = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "HIP_VISIBLE_DEVICES",
                   "huawei": "ASCEND_RT_VISIBLE_DEVICES"}
# Device files docker must pass through, per vendor (NVIDIA uses --gpus instead).
VENDOR_DEVICES = {"amd": ("/dev/kfd", "/dev/dri"),
                  "huawei": ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")}


@dataclass(frozen=True)
class Worker:
    """One instance of a pool, as placed: everything an engine needs to render its process(es)."""

    recipe_id: str
    recipe: Recipe
    hardware: Hardware
    pool: Pool
    pool_index: int
    instance: int
    hosts: tuple[str, ...]  # nodes of this instance, head first
    gpus: tuple[tuple[int, ...], ...]  # device indices per node
    node_gpus: tuple[int, ...]  # how many devices each of those nodes has
    port: int | str
    bindings: Mapping[str, str]
    bootstrap_port: int = 8998
    dist_init_port: int = 5000

    @property
    def role(self) -> str:
        return self.pool.role

    @property
    def nnodes(self) -> int:
        return len(self.hosts)

    @property
    def disaggregated(self) -> bool:
        return self.recipe.topology.mode == "disaggregated"

    @property
    def spec(self) -> SpecDecode | None:
        return self.recipe.spec_for(self.pool)

    def bind_host(self, node_rank: int) -> str:
        """Multi-node and disaggregated workers listen on their node's address (peers and the
        router reach them there); a lone server listens everywhere."""
        return self.hosts[node_rank] if self.nnodes > 1 or self.disaggregated else "0.0.0.0"

    def name(self, node_rank: int | None = None) -> str:
        base = f"{self.role}-{self.instance}"
        return base if node_rank is None or self.nnodes == 1 else f"{base}-node-{node_rank}"

    def env(self, node_rank: int) -> dict[str, str]:
        env = {**self.recipe.env, **self.pool.env}
        if len(self.gpus[node_rank]) < self.node_gpus[node_rank] and self.hardware.vendor in VISIBLE_DEVICES:
            env[VISIBLE_DEVICES[self.hardware.vendor]] = ",".join(map(str, self.gpus[node_rank]))
        return {k: scalar_text(substitute(v, self.bindings)) for k, v in env.items()}

    def container(self, node_rank: int) -> ContainerSpec | None:
        return container_spec(self.recipe, self.hardware, self.gpus[node_rank],
                              self.node_gpus[node_rank], self.bindings)

    def where(self) -> str:
        return f"{self.recipe_id}: topology.pools[{self.pool_index}]"


def container_spec(recipe: Recipe, hw: Hardware, gpus: tuple[int, ...], node_gpus: int,
                   bindings: Mapping[str, str]) -> ContainerSpec | None:
    if not recipe.engine.image:
        return None
    c = recipe.container or Container()
    devices: tuple[str, ...] = ()
    gpu_opt = None
    if node_gpus == 0:  # a router: no accelerators
        pass
    elif hw.vendor == "nvidia" and c.gpus:
        # a subset of the node: docker wants the quotes inside the value
        gpu_opt = c.gpus if len(gpus) == node_gpus or not gpus else f'"device={",".join(map(str, gpus))}"'
    if node_gpus == 0:
        devices = ()
    elif c.devices is not None:
        devices = tuple(c.devices)
    elif hw.vendor == "huawei":
        devices = tuple(f"/dev/davinci{i}" for i in gpus) + VENDOR_DEVICES["huawei"]
    else:
        devices = VENDOR_DEVICES.get(hw.vendor, ())
    return ContainerSpec(
        image=recipe.engine.image, gpus=gpu_opt, devices=devices, detach=c.detach,
        shm_size=c.shm_size, ipc=c.ipc, network=c.network, privileged=c.privileged,
        mounts=tuple((substitute(h, bindings), substitute(t, bindings)) for h, t in c.mounts.items()),
        equals=frozenset(c.equals),
    )


@dataclass(frozen=True)
class Managed:
    """A flag (or config key) the engine derives from the schema."""

    key: str
    value: Any
    emit: bool = True  # render it when the args do not name it
    strict: bool = False  # a modelled fact: args naming it must agree
    what: str = ""  # the schema field it comes from, for error messages


def _comparable(value: Any, bindings: Mapping[str, str]) -> str | None:
    text = scalar_text(substitute(value, bindings))
    return None if placeholders_in(text) else text


def merge_flags(managed: list[Managed], args: Mapping[str, Any], canon: Callable[[str], str],
                bindings: Mapping[str, str], where: str) -> list[tuple[str, Any]]:
    """Derived flags the args do not name (engine order), then the args (recipe order)."""
    by_name = {canon(base_key(m.key)): m for m in managed}
    named = {canon(base_key(k)) for k in args}
    out = [(m.key, m.value) for m in managed if m.emit and canon(base_key(m.key)) not in named]
    for key, value in args.items():
        m = by_name.get(canon(base_key(key)))
        if m is not None and m.strict:
            check_agrees(key, value, m, bindings, where)
        out.append((key, value))
    return out


def check_agrees(key: str, value: Any, m: Managed, bindings: Mapping[str, str], where: str) -> None:
    if m.value is None:
        return
    given, derived = _comparable(value, bindings), _comparable(m.value, bindings)
    if given is not None and derived is not None and given.lower() != derived.lower():
        raise RenderError(f"{where}.args.{key}: {given} contradicts {m.what or 'the recipe'} "
                          f"(which means {m.key} {derived})")


def merge_config(managed: list[Managed], config: Mapping[str, Any], bindings: Mapping[str, str],
                 where: str) -> dict[str, Any]:
    """The config-file form of merge_flags: the recipe's keys in order, derived keys added where
    missing; derived mappings merge into the recipe's mapping of the same name."""
    # derived keys the recipe leaves out go first, as the published configs write them
    out: dict[str, Any] = {m.key: m.value for m in managed if m.emit and m.key not in config}
    out.update(config)
    for m in managed:
        if m.key not in config:
            continue
        if isinstance(m.value, dict) and isinstance(out[m.key], dict):
            sub = [Managed(k, v, strict=m.strict, what=m.what) for k, v in m.value.items()]
            out[m.key] = merge_config(sub, out[m.key], bindings, f"{where}.{m.key}")
        elif m.strict:
            check_agrees(m.key, out[m.key], m, bindings, where)
    return out


def bind_items(items: list[tuple[str, Any]], bindings: Mapping[str, str]) -> list[tuple[str, Any]]:
    return [(substitute(k, bindings), substitute(v, bindings)) for k, v in items]


def effective(flags: list[tuple[str, Any]], key: str, canon: Callable[[str], str]) -> Any:
    """The value a flag list gives ``key`` (the last one wins, as argparse does)."""
    found = None
    for k, v in flags:
        if canon(base_key(k)) == key:
            found = v
    return found


def as_port(value: Any) -> int | str | None:
    """A port as rendered: an int once bound, the ${PLACEHOLDER} text until then."""
    if value is None or isinstance(value, int):
        return value
    text = str(value)
    return int(text) if text.isdigit() else text


@dataclass
class Collected:
    """Placeholders still unbound after rendering. Only names the recipe or the engine put
    there count (``candidates``): a ``${X}`` inside a bound value is text, not a placeholder."""

    candidates: frozenset[str]
    names: set[str] = field(default_factory=set)

    def add(self, process: Process) -> Process:
        found = placeholders_in(list(process.argv)) | placeholders_in(process.env)
        found |= placeholders_in(process.files) | placeholders_in(process.host)
        if process.mpi:
            found |= placeholders_in(list(process.mpi.hosts))
        if process.container:
            found |= placeholders_in([list(m) for m in process.container.mounts])
        mine = frozenset(found & self.candidates)
        self.names |= mine
        return replace(process, placeholders=mine)
