"""SimConfig.from_recipe: the deployment a catalog recipe describes, one config per pool
(config_parts.from_parts over the knobs engine_args.py reads from the pool's args, config file
and environment); a disaggregated recipe becomes its decode pool's config holding its prefill
pool's and the bandwidth of the KV handoff between them. SimConfig takes it as its
constructor (config.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol, TypeVar

from ..catalog.loader import Catalog
from ..catalog.schema import Pool
from .config_parts import Built, from_parts, lookup
from .engine_args import engine_knobs, rocm_aiter, sglang_env
from .engine_memory import GB
from .errors import SimConfigError
from .tables import default_tables, fabric_name
from .tuning import DEFAULT_TUNING, Tuning


class BuiltPool(Built, Protocol):
    """What from_recipe reads of a pool's config (a SimConfig): its engine and the GPUs and
    fabric the KV handoff streams over."""

    engine: str
    attention_dp: bool
    instances: int
    vendor: str
    scale_up_domain: int
    scale_up_bw: float
    tuning: Tuning

    @property
    def gpus(self) -> int: ...

    @property
    def total_gpus(self) -> int: ...


P = TypeVar("P", bound=BuiltPool)


def from_recipe(cls: type[P], catalog: Catalog, recipe_id: str, *,
                served_model_name: str | None = None, params: dict[str, Any] | None = None,
                tuning: Tuning = DEFAULT_TUNING, dataset: str | None = None,
                **overrides: Any) -> P:
    """The deployment a recipe describes.

    ``params`` binds ``${NAME}`` placeholders left to run time (``{"CONC": 64}`` for a recipe
    with ``max-num-seqs: ${CONC}``); an arg whose placeholder stays unbound is ignored.
    ``overrides`` are from_parts knobs (max_num_seqs=…, kv_dtype=…) applied to every pool,
    over whatever the recipe says. ``dataset`` (random, chat, agentic, ...) picks the
    speculative acceptance rate from the tables when the recipe gives none."""
    if recipe_id not in catalog.recipes:
        raise SimConfigError(f"unknown recipe {recipe_id!r} (see benchmarks/; e.g. "
                             f"{next(iter(catalog.recipes), 'none')})")
    recipe = catalog.recipes[recipe_id]
    name = served_model_name or catalog.checkpoint(recipe_id)

    bound = {**recipe.params, **(params or {})}
    vendor = lookup(catalog, "hardware", recipe.hardware)[0].vendor
    from .variation import step_scale  # the environment's experiment knobs (off: 1.0)

    scale = step_scale(recipe_id)

    def pool_config(pool: Pool) -> P:
        knobs = engine_knobs(recipe, pool, bound)
        knobs["engine_version"] = recipe.engine.version
        knobs["rocm_aiter"] = rocm_aiter(vendor, recipe.engine.name,
                                         {**recipe.env, **pool.env}, bound)
        knobs.update(sglang_env({**recipe.env, **pool.env}, bound))
        knobs.update({k: v for k, v in overrides.items() if v is not None})
        par = pool.parallel
        spec = pool.spec_decode or recipe.spec_decode
        # the recipe's speculative decoding, unless the overrides say otherwise
        knobs = {
            "spec_draft_tokens": spec.draft_tokens if spec else 0,
            "spec_acceptance": (spec.acceptance_rate if spec.acceptance_rate is not None
                                else default_tables().acceptance_rate(spec.method, dataset))
            if spec else None,
            **knobs,
        }
        # SGLang's all-to-all MoE backends (DeepEP, Mooncake) put the experts on expert
        # parallelism over the TP group: ep = tp, whether or not --ep is given
        a2a = knobs.pop("a2a_experts", False)
        ep = par.tp if a2a and par.ep == 1 else par.ep
        made = from_parts(
            cls, catalog, recipe.hardware, recipe.model, recipe.precision,
            tp=par.tp, pp=par.pp, dp=par.dp, ep=ep, attention_dp=par.attention_dp, moe_a2a=a2a,
            served_model_name=name, instances=pool.instances,
            router_policy=recipe.router.policy if recipe.router else "round_robin",
            tuning=tuning, engine=recipe.engine.name, **knobs,
        )
        return made if scale == 1.0 else replace(made, step_scale=scale)

    pools = recipe.topology.pools
    if recipe.topology.mode == "aggregated":
        if len(pools) > 1:
            # several 'both' pools: the sim serves them as one pool of the first kind
            total = sum(p.instances for p in pools)
            return replace(pool_config(pools[0]), instances=total)
        return pool_config(pools[0])
    prefill_pool = next(p for p in pools if p.role == "prefill")
    decode_pool = next(p for p in pools if p.role == "decode")
    prefill = pool_config(prefill_pool)
    decode = pool_config(decode_pool)
    # SGLang PD: a request's decode DP rank is its bootstrap room (random) modulo dp
    dispatch = "random" if decode.engine == "sglang" and decode.attention_dp else "balanced"
    # a PD decode server admits requests whose KV arrived: it never prefills
    return replace(decode, prefill=prefill, kv_transfer_bw=_kv_transfer_bw(prefill, decode),
                   rank_dispatch=dispatch, prefill_alone=False)


def _kv_transfer_bw(prefill: BuiltPool, decode: BuiltPool) -> float:
    """One handoff streams over every GPU pair of the smaller instance, on the fabric that joins
    the two pools: NVLink inside one NVL72 domain, the scale-out NICs otherwise; at the fabric's
    reachable share of its bandwidth (infermatrix/sim/data/efficiency.yaml)."""
    lanes = min(prefill.gpus, decode.gpus)
    span = prefill.total_gpus + decode.gpus * decode.instances
    fabric = fabric_name(decode.vendor, decode.scale_up_domain, span)
    per_lane = decode.tuning.inter_node_gbps * GB if fabric == "infiniband" else decode.scale_up_bw
    return per_lane * lanes * default_tables().fabrics[fabric].bw_eff
