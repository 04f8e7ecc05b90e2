"""TensorRT-LLM: ``trtllm-serve MODEL --config <role>_config.yaml`` per worker.

The worker's knobs live in its YAML config (``Pool.config``); parallelism, KV dtype, the
cache transceiver and speculative decoding are derived from the schema and merged in.
A worker larger than one node is one MPI job (srun, one rank per GPU) under
``trtllm-llmapi-launch``.
"""

from __future__ import annotations

from typing import Any

import yaml

from .base import Managed, Worker, as_port, bind_items, effective, merge_config, merge_flags
from .deployment import MpiLaunch, Process
from .flags import render_flags, substitute, substitute_config

HEALTH = "/health"
CONFIG_FILES = {"prefill": "ctx_config.yaml", "decode": "gen_config.yaml", "both": "config.yaml"}
KV_DTYPES = {"fp8": "fp8", "bf16": "auto", "fp16": "auto"}
TRANSCEIVERS = {"nixl": "NIXL", "ucx": "UCX", "mooncake": "MOONCAKE", "nccl": "MPI"}


def dump_yaml(data: Any) -> str:
    """Block-style YAML in the recipe's key order, as the published configs are written."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=1 << 16)


def spec_config(w: Worker) -> dict[str, Any] | None:
    spec = w.spec
    if spec is None:
        return None
    if spec.method in ("mtp", "nextn"):
        return {"decoding_type": "MTP", "num_nextn_predict_layers": spec.draft_tokens}
    kind = {"eagle": "Eagle", "eagle3": "Eagle3", "ngram": "NGram", "draft": "DraftTarget"}
    return {"decoding_type": kind[spec.method], "max_draft_len": spec.draft_tokens}


def config_managed(w: Worker) -> list[Managed]:
    par, r = w.pool.parallel, w.recipe
    out = [
        Managed("tensor_parallel_size", par.tp, strict=True, what="parallel.tp"),
        Managed("moe_expert_parallel_size", par.ep, strict=True, what="parallel.ep"),
        Managed("pipeline_parallel_size", par.pp, strict=True, what="parallel.pp"),
        Managed("context_parallel_size", par.cp, emit=par.cp > 1, strict=True, what="parallel.cp"),
        Managed("enable_attention_dp", par.attention_dp, strict=True, what="parallel.attention_dp"),
        Managed("max_seq_len", r.max_model_len, emit=r.max_model_len is not None, strict=True,
                what="max_model_len"),
    ]
    if r.kv_cache_dtype:
        out.append(Managed("kv_cache_config", {"dtype": KV_DTYPES[r.kv_cache_dtype]}, strict=True,
                           what="kv_cache_dtype"))
    if w.disaggregated and r.kv_transfer:
        backend = TRANSCEIVERS.get(r.kv_transfer.backend, r.kv_transfer.backend.upper())
        out.append(Managed("cache_transceiver_config", {"backend": backend}, strict=True,
                           what="kv_transfer.backend"))
    spec = spec_config(w)
    if spec:
        out.append(Managed("speculative_config", spec, strict=True, what="spec_decode"))
    return out


def canon(key: str) -> str:
    return key.replace("_", "-")


def worker(w: Worker) -> list[Process]:
    name = CONFIG_FILES[w.role]
    config = merge_config(config_managed(w), w.pool.config, w.bindings, f"{w.where()}.config")
    config = substitute_config(config, w.bindings)
    cli = [Managed("host", w.bind_host(0)), Managed("port", w.port), Managed("config", name)]
    flags = bind_items(merge_flags(cli, w.pool.args, canon, w.bindings, w.where()), w.bindings)
    ranks = w.pool.parallel.gpus
    mpi = None
    if w.nnodes > 1:
        mpi = MpiLaunch(ntasks=ranks, ntasks_per_node=len(w.gpus[0]), hosts=w.hosts,
                        wrapper=("trtllm-llmapi-launch",))
    return [Process(
        name=w.name(), role=w.role, instance=w.instance, node_rank=0, nnodes=w.nnodes,
        host=w.hosts[0],
        argv=("trtllm-serve", substitute("${MODEL}", w.bindings), *render_flags(flags)),
        env=w.env(0), files={name: dump_yaml(config)}, container=w.container(0),
        gpus=w.gpus[0], port=as_port(effective(flags, "port", canon)), health_path=HEALTH, mpi=mpi,
    )]
