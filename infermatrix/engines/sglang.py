"""SGLang: ``python3 -m sglang.launch_server``, one process per node of an instance."""

from __future__ import annotations

from .base import Managed, Worker, as_port, bind_items, effective, merge_flags
from .deployment import Process
from .flags import render_flags

COMMAND = ("python3", "-m", "sglang.launch_server")
HEALTH = "/health"

# spellings of the same knob -> the one we derive
ALIASES = {"tensor-parallel-size": "tp", "tp-size": "tp", "data-parallel-size": "dp",
           "dp-size": "dp", "expert-parallel-size": "ep", "ep-size": "ep", "model": "model-path",
           "pipeline-parallel-size": "pp", "pp-size": "pp"}
KV_DTYPES = {"fp8": "fp8_e4m3", "bf16": "bfloat16", "fp16": "float16"}
SPEC_ALGORITHMS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "nextn": "NEXTN", "mtp": "NEXTN",
                   "ngram": "NGRAM", "draft": "STANDALONE"}


def canon(key: str) -> str:
    return ALIASES.get(key, key)


def managed(w: Worker, node_rank: int) -> list[Managed]:
    par, r = w.pool.parallel, w.recipe
    multi = w.nnodes > 1
    prefill = w.disaggregated and w.role == "prefill"
    out = [
        Managed("model-path", "${MODEL}"),
        Managed("disaggregation-mode", w.role if w.disaggregated else None, strict=True,
                what=f"role {w.role}"),
        Managed("host", w.bind_host(node_rank)),
        Managed("port", w.port),
        Managed("dist-init-addr", f"{w.hosts[0]}:{w.dist_init_port}" if multi else None),
        Managed("disaggregation-bootstrap-port", w.bootstrap_port if prefill else None),
        Managed("node-rank", node_rank if multi else None),
        Managed("nnodes", w.nnodes if multi else None),
        Managed("tp", par.tp, emit=par.tp > 1, strict=True, what="parallel.tp"),
        Managed("pp", par.pp, emit=par.pp > 1, strict=True, what="parallel.pp"),
        Managed("dp", par.dp, emit=par.dp > 1, strict=True, what="parallel.dp"),
        Managed("ep", par.ep, emit=par.ep > 1, strict=True, what="parallel.ep"),
        Managed("enable-dp-attention", par.attention_dp, strict=True, what="parallel.attention_dp"),
        Managed("kv-cache-dtype", KV_DTYPES.get(r.kv_cache_dtype or ""), strict=True,
                what="kv_cache_dtype"),
        Managed("context-length", r.max_model_len, strict=True, what="max_model_len"),
        Managed("disaggregation-transfer-backend",
                r.kv_transfer.backend if w.disaggregated and r.kv_transfer else None,
                strict=True, what="kv_transfer.backend"),
    ]
    spec = w.spec
    if spec:
        steps = spec.draft_tokens
        out += [
            Managed("speculative-algorithm", SPEC_ALGORITHMS[spec.method], strict=True,
                    what="spec_decode.method"),
            Managed("speculative-num-steps", steps, strict=True, what="spec_decode.draft_tokens"),
            Managed("speculative-eagle-topk", spec.topk, strict=True, what="spec_decode.topk"),
            # the draft tree's nodes, the verified root included
            Managed("speculative-num-draft-tokens", steps * spec.topk + 1, strict=True,
                    what="spec_decode"),
        ]
    return out


def worker(w: Worker) -> list[Process]:
    procs = []
    for rank in range(w.nnodes):
        flags = merge_flags(managed(w, rank), w.pool.args, canon, w.bindings, w.where())
        flags = bind_items(flags, w.bindings)
        port = as_port(effective(flags, "port", canon))
        procs.append(Process(
            name=w.name(rank), role=w.role, instance=w.instance, node_rank=rank, nnodes=w.nnodes,
            host=w.hosts[rank], argv=(*COMMAND, *render_flags(flags)), env=w.env(rank),
            container=w.container(rank), gpus=w.gpus[rank],
            port=port if rank == 0 else None,  # peers of a multi-node instance serve no HTTP
            health_path=HEALTH if rank == 0 else None,
        ))
    return procs
