"""Routers and orchestrators in front of the worker instances.

* sglang-router: ``python -m sglang_router.launch_router`` — ``--pd-disaggregation --prefill URL
  BOOTSTRAP_PORT --decode URL`` or ``--worker-urls`` for aggregated instances.
* vllm-router: ``vllm-router`` — ``--vllm-pd-disaggregation --prefill URL --decode URL``.
* trtllm-disaggregated: ``trtllm-serve disaggregated -c server_config.yaml``; the config lists
  context/generation servers (num_instances, urls, router type).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..catalog.schema import Recipe, Router
from .base import Managed, as_port, bind_items, effective, merge_config, merge_flags
from .deployment import ContainerSpec, Process
from .flags import RenderError, Repeat, render_flags, scalar_text, substitute, substitute_config
from .trtllm import dump_yaml

HEALTH = "/health"


@dataclass(frozen=True)
class Upstream:
    """One worker instance as the router sees it."""

    role: str
    instance: int
    host: str
    port: int | str
    bootstrap_port: int | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class RouterContext:
    recipe_id: str
    recipe: Recipe
    router: Router
    host: str  # node the router runs on
    port: int | str
    upstreams: tuple[Upstream, ...]
    bindings: Mapping[str, str]
    container: ContainerSpec | None

    def of(self, role: str) -> list[Upstream]:
        return [u for u in self.upstreams if u.role == role]

    @property
    def disaggregated(self) -> bool:
        return self.recipe.topology.mode == "disaggregated"

    @property
    def bind(self) -> str:
        return self.router.host or "0.0.0.0"

    def where(self) -> str:
        return f"{self.recipe_id}: router"


def _identity(key: str) -> str:
    return key


def _cli_router(ctx: RouterContext, command: tuple[str, ...], managed: list[Managed],
                canon: Callable[[str], str] = _identity, files: dict[str, str] | None = None) -> Process:
    flags = bind_items(merge_flags(managed, ctx.router.args, canon, ctx.bindings, ctx.where()),
                       ctx.bindings)
    env = {k: scalar_text(substitute(v, ctx.bindings)) for k, v in ctx.router.env.items()}
    port = effective(flags, "port", canon)
    return Process(
        name="router", role="router", instance=0, node_rank=0, nnodes=1, host=ctx.host,
        argv=(*command, *render_flags(flags)), env=env, files=files or {},
        container=ctx.container, port=as_port(port if port is not None else ctx.port),
        health_path=HEALTH,
    )


def sglang_router(ctx: RouterContext) -> Process:
    if ctx.disaggregated:
        upstream = [
            Managed("pd-disaggregation", True),
            Managed("policy", ctx.router.policy),
            Managed("prefill", Repeat(tuple([u.url, u.bootstrap_port] for u in ctx.of("prefill")))),
            Managed("decode", Repeat(tuple(u.url for u in ctx.of("decode")))),
        ]
    else:
        upstream = [Managed("worker-urls", [u.url for u in ctx.upstreams]),
                    Managed("policy", ctx.router.policy)]
    managed = [*upstream, Managed("host", ctx.bind), Managed("port", ctx.port)]
    return _cli_router(ctx, ("python", "-m", "sglang_router.launch_router"), managed)


def vllm_router(ctx: RouterContext) -> Process:
    if ctx.disaggregated:
        upstream = [
            Managed("vllm-pd-disaggregation", True),
            Managed("prefill", Repeat(tuple(u.url for u in ctx.of("prefill")))),
            Managed("decode", Repeat(tuple(u.url for u in ctx.of("decode")))),
        ]
    else:
        upstream = [Managed("worker-urls", [u.url for u in ctx.upstreams])]
    managed = [*upstream, Managed("policy", ctx.router.policy), Managed("host", ctx.bind),
               Managed("port", ctx.port)]
    return _cli_router(ctx, ("vllm-router",), managed)


SERVER_CONFIG = "server_config.yaml"


def trtllm_disaggregated(ctx: RouterContext) -> Process:
    if not ctx.disaggregated:
        raise RenderError(f"{ctx.where()}: trtllm-disaggregated fronts prefill and decode pools only")

    def servers(role: str) -> dict[str, Any]:
        ups = ctx.of(role)
        return {"num_instances": len(ups), "router": {"type": ctx.router.policy},
                "urls": [u.address for u in ups]}

    managed = [Managed("hostname", ctx.host), Managed("port", ctx.port),
               Managed("context_servers", servers("prefill")),
               Managed("generation_servers", servers("decode"))]
    config = merge_config(managed, ctx.router.config, ctx.bindings, f"{ctx.where()}.config")
    config = substitute_config(config, ctx.bindings)
    cli = [Managed("-c", SERVER_CONFIG)]
    proc = _cli_router(ctx, ("trtllm-serve", "disaggregated"), cli,
                       files={SERVER_CONFIG: dump_yaml(config)})
    return proc


RENDERERS: dict[str, Callable[[RouterContext], Process]] = {
    "sglang-router": sglang_router,
    "vllm-router": vllm_router,
    "trtllm-disaggregated": trtllm_disaggregated,
}


def render_router(ctx: RouterContext) -> Process:
    try:
        renderer = RENDERERS[ctx.router.name]
    except KeyError:
        raise RenderError(f"{ctx.where()}.name: no renderer for {ctx.router.name!r} yet "
                          f"(have {', '.join(RENDERERS)})") from None
    return renderer(ctx)
