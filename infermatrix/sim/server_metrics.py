"""/metrics: the deployment's gauges and counters as Prometheus text, under vLLM's metric names
(``vllm:``) where vLLM has one and ``sim:`` for the simulator's own.
"""

from __future__ import annotations

from .config import SimConfig
from .engine import Deployment


def prometheus_text(config: SimConfig, deployment: Deployment, success_total: int,
                    failed_total: int) -> str:
    insts = deployment.all_instances
    cores = [i.core for i in insts]
    pools = [c.pool for c in cores]
    label = f'model_name="{config.served_model_name}"'
    queries = sum(p.query_tokens for p in pools)
    hits = sum(p.hit_tokens for p in pools)
    used = sum(p.used_blocks for p in pools)
    total = sum(p.num_blocks for p in pools) or 1
    rows: list[tuple[str, str, str, float]] = [
        ("vllm:num_requests_running", "gauge", "Requests in the running batch",
         sum(len(c.running) for c in cores)),
        ("vllm:num_requests_waiting", "gauge", "Requests waiting to be scheduled",
         sum(len(c.waiting) for c in cores)),
        ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage (1 = full)", used / total),
        ("vllm:gpu_cache_usage_perc", "gauge", "KV-cache usage (1 = full), legacy name",
         used / total),
        ("vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache",
         queries),
        ("vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache", hits),
        ("sim:prefix_cache_hit_rate", "gauge", "Prefix-cache hits / queries since start",
         hits / queries if queries else 0.0),
        ("vllm:prompt_tokens_total", "counter", "Prompt tokens admitted",
         sum(c.prompt_tokens_total for c in cores)),
        ("vllm:generation_tokens_total", "counter", "Tokens generated",
         sum(c.generation_tokens_total for c in cores)),
        ("vllm:num_preemptions_total", "counter", "Sequences preempted for lack of KV cache",
         sum(c.preemptions_total for c in cores)),
        ("vllm:request_success_total", "counter", "Requests finished", success_total),
        ("sim:request_failed_total", "counter", "Requests rejected, aborted or faulted",
         failed_total),
        ("sim:steps_total", "counter", "Engine steps", sum(c.steps_total for c in cores)),
        ("sim:kv_transfers_total", "counter", "Prefill→decode KV handoffs",
         deployment.kv_transfers),
    ]
    out: list[str] = []
    for name, kind, help_text, value in rows:
        out += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name}{{{label}}} {value:g}"]
    out += ["# HELP sim:instance_requests_running Running requests per instance",
            "# TYPE sim:instance_requests_running gauge"]
    out += [f'sim:instance_requests_running{{{label},instance="{i.name}"}} {len(i.core.running)}'
            for i in insts]
    return "\n".join(out) + "\n"
