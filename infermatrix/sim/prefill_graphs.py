"""Which steps that prefill replay captured graphs, as each engine decides it.

Decode steps replay CUDA graphs captured per batch size; a step that prefills (a prompt's
chunk, alone or with decodes) varies in token count, and engines cover it, where they do, with
*piecewise* graphs (the layers' GEMMs and element-wise parts captured, attention run between
them) up to a largest captured token count. A step outside them launches every operator of
every layer from the host: it takes at least ``layers × eager_dispatch`` (operators.py).

The rules come from the engine table (efficiency.yaml ``engines.*.prefill_graphs``, with their
sources); a deployment may turn the graphs off or on itself (``SimConfig.prefill_graphs``:
SGLang's ``--disable-piecewise-cuda-graph`` / ``--enforce-piecewise-cuda-graph``,
TensorRT-LLM's ``torch_compile_config.enable_piecewise_cuda_graph``) and cap the captured
size (SGLang's ``--piecewise-cuda-graph-max-tokens``).
"""

from __future__ import annotations

import math
from typing import Protocol

from .tables import PrefillGraphs, at_least, release


class Deployment(Protocol):
    """What the rules read of a deployment (a SimConfig; named here so that config.py, which
    asks this module, is not imported back)."""

    engine_version: str
    prefill_graphs: bool | None
    prefill_graph_max_tokens: int
    vendor: str
    attention_dp: bool
    moe_a2a: bool
    pp: int
    spec_draft_tokens: int
    attention: str


def _turned_off(rules: PrefillGraphs, cfg: Deployment, built: tuple[int, ...] | None) -> bool:
    """Whether the engine turns its prefill graphs off for this deployment: not asked for
    where they are not on by default, or under a feature it turns them off for (which it does
    even when they are asked for)."""
    known = built is not None
    if not cfg.prefill_graphs and (not rules.default
                                   or (known and not at_least(built, rules.since))):
        return True
    if rules.vendors is not None and cfg.vendor not in rules.vendors:
        return True
    features = {"attention_dp": cfg.attention_dp, "moe_a2a": cfg.moe_a2a, "pp": cfg.pp > 1}
    if any(features[name] for name in rules.off_under):
        return True
    if (cfg.spec_draft_tokens and known and rules.speculative_since is not None
            and not at_least(built, rules.speculative_since)):
        return True
    return (cfg.attention == "mla-sparse" and known and rules.sparse_attention_since is not None
            and not at_least(built, rules.sparse_attention_since))


def graphed_prefill_tokens(rules: PrefillGraphs | None, cfg: Deployment) -> float:
    """The largest step (tokens) that prefills and still replays graphs under this deployment:
    ``inf`` for every step, 0 for none. A deployment that turns them off has none; one that
    asks for them (``cfg.prefill_graphs``) gets them where the engine does not turn them off
    (SGLang's testing flag --enforce-piecewise-cuda-graph, which skips those checks too, is
    read as asking)."""
    if rules is None:
        return math.inf
    if cfg.prefill_graphs is False or _turned_off(rules, cfg, release(cfg.engine_version)):
        return 0.0
    if cfg.prefill_graph_max_tokens > 0:
        return float(cfg.prefill_graph_max_tokens)
    if rules.mla_max_tokens and cfg.attention.startswith("mla"):
        return float(rules.mla_max_tokens)
    return math.inf
