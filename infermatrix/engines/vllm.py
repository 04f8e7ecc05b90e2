"""vLLM: ``vllm serve MODEL``. Multi-node instances use vLLM's own --nnodes/--node-rank/
--master-addr (multiprocessing executor); disaggregated pools get --kv-transfer-config."""

from __future__ import annotations

from .base import Managed, Worker, as_port, bind_items, effective, merge_flags
from .deployment import Process
from .flags import render_flags, substitute

HEALTH = "/health"

ALIASES = {"tp": "tensor-parallel-size", "pp": "pipeline-parallel-size",
           "dp": "data-parallel-size", "model": "model-tag"}
KV_DTYPES = {"fp8": "fp8", "bf16": "auto", "fp16": "auto"}
# our backend name -> vLLM KV connector class
CONNECTORS = {"nixl": "NixlConnector", "nccl": "P2pNcclConnector", "lmcache": "LMCacheConnectorV1",
              "mooncake": "MooncakeConnector"}
SPEC_METHODS = {"eagle": "eagle", "eagle3": "eagle3", "mtp": "mtp", "nextn": "mtp",
                "ngram": "ngram", "draft": "draft_model"}


def canon(key: str) -> str:
    return ALIASES.get(key, key)


def managed(w: Worker, node_rank: int) -> list[Managed]:
    par, r = w.pool.parallel, w.recipe
    multi = w.nnodes > 1
    out = [
        Managed("host", w.bind_host(node_rank)),
        Managed("port", w.port),
        Managed("nnodes", w.nnodes if multi else None),
        Managed("node-rank", node_rank if multi else None),
        Managed("master-addr", w.hosts[0] if multi else None),
        Managed("headless", multi and node_rank > 0),
        # vLLM's data parallelism is attention DP: each of the dp ranks holds tp/dp of the
        # attention, experts span all of them (--enable-expert-parallel)
        Managed("tensor-parallel-size", par.attention_tp, emit=par.attention_tp > 1, strict=True,
                what="parallel.tp (per data-parallel rank)"),
        Managed("pipeline-parallel-size", par.pp, emit=par.pp > 1, strict=True, what="parallel.pp"),
        Managed("data-parallel-size", par.dp, emit=par.dp > 1, strict=True, what="parallel.dp"),
        Managed("enable-expert-parallel", par.ep > 1, strict=True, what="parallel.ep"),
        Managed("kv-cache-dtype", KV_DTYPES.get(r.kv_cache_dtype or ""), strict=True,
                what="kv_cache_dtype"),
        Managed("max-model-len", r.max_model_len, strict=True, what="max_model_len"),
    ]
    if w.disaggregated and r.kv_transfer:
        connector = CONNECTORS.get(r.kv_transfer.backend, r.kv_transfer.backend)
        out.append(Managed("kv-transfer-config",
                           {"kv_connector": connector, "kv_role": "kv_both", **r.kv_transfer.args}))
    if w.spec:
        out.append(Managed("speculative-config", {"method": SPEC_METHODS[w.spec.method],
                                                  "num_speculative_tokens": w.spec.draft_tokens}))
    return out


def worker(w: Worker) -> list[Process]:
    procs = []
    for rank in range(w.nnodes):
        flags = bind_items(merge_flags(managed(w, rank), w.pool.args, canon, w.bindings, w.where()),
                           w.bindings)
        procs.append(Process(
            name=w.name(rank), role=w.role, instance=w.instance, node_rank=rank, nnodes=w.nnodes,
            host=w.hosts[rank], argv=("vllm", "serve", substitute("${MODEL}", w.bindings), *render_flags(flags)),
            env=w.env(rank), container=w.container(rank), gpus=w.gpus[rank],
            port=as_port(effective(flags, "port", canon)) if rank == 0 else None,
            health_path=HEALTH if rank == 0 else None,
        ))
    return procs
