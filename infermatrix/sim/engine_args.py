"""A recipe's engine settings read as simulator knobs: which of a pool's command-line args,
engine config file entries and environment variables change what the simulated engine does,
and the SimConfig.from_parts knob each one sets (the rest are launch details).

``${NAME}`` placeholders resolve against the recipe's params (catalog/placeholders.py); a
setting whose placeholder is bound only at run time is left at the engine's default.
"""

from __future__ import annotations

from typing import Any

from ..catalog.placeholders import fill, names_in
from ..catalog.schema import Pool, Recipe

# engine argument (normalised: lower case, '-' for '_') -> SimConfig knob
_ARG_KNOBS = {
    "max-num-seqs": "max_num_seqs", "max-running-requests": "max_num_seqs",
    "max-batch-size": "max_num_seqs",
    "max-num-batched-tokens": "max_num_batched_tokens", "chunked-prefill-size": "max_num_batched_tokens",
    "max-num-tokens": "max_num_batched_tokens",
    "gpu-memory-utilization": "memory_fraction", "mem-fraction-static": "memory_fraction",
    "free-gpu-memory-fraction": "memory_fraction",
    "block-size": "block_size", "page-size": "block_size", "tokens-per-block": "block_size",
    "max-model-len": "max_model_len", "context-length": "max_model_len", "max-seq-len": "max_model_len",
    "stream-interval": "stream_interval", "max-prefill-tokens": "max_prefill_tokens",
    "scheduler-recv-interval": "recv_interval",
    # decode graphs: SGLang and TensorRT-LLM count sequences, vLLM tokens
    "cuda-graph-max-bs": "graph_max_seqs", "cuda-graph-config.max-batch-size": "graph_max_seqs",
    "max-cudagraph-capture-size": "graph_max_tokens",
    "attn-cp-size": "attention_cp",
    "piecewise-cuda-graph-max-tokens": "prefill_graph_max_tokens",
    # TensorRT-LLM: the share of the memory left after the weights, not of the whole HBM
    "kv-cache-config.free-gpu-memory-fraction": "kv_free_fraction",
}


# graph capture sizes given as a list: the largest is the limit
_GRAPH_LISTS = {"cuda-graph-bs": "graph_max_seqs", "cuda-graph-config.batch-sizes": "graph_max_seqs",
                "cuda-graph-sizes": "graph_max_tokens"}


# flags that turn piecewise graphs for steps that prefill off (False) or on (True) when set:
# SGLang's (--enable-piecewise-cuda-graph before they were the default, 0.5.10; full
# --enable-torch-compile turns them off), TensorRT-LLM's
_PREFILL_GRAPH_SWITCHES = {
    "disable-piecewise-cuda-graph": False, "enable-torch-compile": False,
    "enforce-piecewise-cuda-graph": True,
    "enable-piecewise-cuda-graph": True, "torch-compile-config.enable-piecewise-cuda-graph": True,
}


def _resolve(value: Any, params: dict[str, Any]) -> Any:
    """Substitute ${NAME} from the recipe's params; None when a name is bound only at run time."""
    if not isinstance(value, str):
        return value
    if any(n not in params for n in names_in(value)):
        return None
    return fill(value, lambda name: str(params[name]))


def _settings(pool: Pool) -> list[tuple[str, Any]]:
    """Every (key, value) a pool sets: its command-line args, then its engine config file with
    nested sections flattened (TensorRT-LLM kv_cache_config.free_gpu_memory_fraction, ...)."""
    out: list[tuple[str, Any]] = [(k, v) for k, v in pool.args.items()]

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out.append((prefix, value))

    walk("", pool.config)
    return out


def rocm_aiter(vendor: str, engine: str, env: dict[str, Any], params: dict[str, Any]) -> bool:
    """Whether an engine on AMD runs AITER's kernels under this environment: SGLang unless
    SGLANG_USE_AITER is off (its ROCm images set it to 1), vLLM only with VLLM_ROCM_USE_AITER on
    (vLLM's own default is off). Elsewhere True: the flag only selects AMD table rows."""
    if vendor != "amd":
        return True
    if engine == "sglang":
        value = _resolve(env.get("SGLANG_USE_AITER", "1"), params)
        return value is None or _truthy(value)
    if engine == "vllm":
        value = _resolve(env.get("VLLM_ROCM_USE_AITER", "0"), params)
        return value is not None and _truthy(value)
    return True


def sglang_env(env: dict[str, Any], params: dict[str, Any]) -> dict[str, bool]:
    """The SGLang environment switches spec_cost.py reads: SGLANG_ENABLE_SPEC_V2 (speculative
    steps under the overlap scheduler; off by default in the builds dated here) and
    SGLANG_SCHEDULER_SKIP_ALL_GATHER (no per-step metadata all-gather under attention DP)."""
    def on(name: str) -> bool:
        value = _resolve(env.get(name, "0"), params)
        return value is not None and _truthy(value)

    return {"spec_v2": on("SGLANG_ENABLE_SPEC_V2"),
            "dp_sync": not on("SGLANG_SCHEDULER_SKIP_ALL_GATHER")}


def engine_knobs(recipe: Recipe, pool: Pool, params: dict[str, Any]) -> dict[str, Any]:
    """The scheduler knobs a pool's engine args and config set (the rest are launch details)."""
    knobs: dict[str, Any] = {}
    if recipe.kv_cache_dtype:
        knobs["kv_dtype"] = recipe.kv_cache_dtype
    if recipe.max_model_len:
        knobs["max_model_len"] = recipe.max_model_len
    for raw_key, raw in _settings(pool):
        key = raw_key.lower().lstrip("-").replace("_", "-")
        if key == "cuda-graph-config" and raw is None:  # TensorRT-LLM: null disables graphs
            knobs["graph_max_seqs"] = 0
            continue
        value = _resolve(raw, params)
        if value is None:
            continue
        if key in _GRAPH_LISTS and isinstance(value, list) and value:
            sizes = [_resolve(v, params) for v in value]
            if all(isinstance(v, int) for v in sizes):
                knobs[_GRAPH_LISTS[key]] = max(sizes)
            continue
        if key == "scheduler-config.capacity-scheduler-policy":  # TensorRT-LLM
            knobs["reserve_to_completion"] = str(value).upper() == "GUARANTEED_NO_EVICT"
            continue
        if key == "enable-mixed-chunk":
            knobs["mixed_chunk"] = _truthy(value)
            continue
        if key in ("enable-chunked-prefill", "no-enable-chunked-prefill"):  # vLLM
            knobs["chunked_prefill"] = _truthy(value) == (key == "enable-chunked-prefill")
            continue
        if key == "moe-a2a-backend":
            knobs["a2a_experts"] = str(value).lower() != "none"
            continue
        if key in ("disable-overlap-schedule", "disable-overlap-scheduler"):  # SGLang, TRT-LLM
            knobs["overlap_intake"] = not _truthy(value)
            continue
        if key in _PREFILL_GRAPH_SWITCHES:  # piecewise graphs for steps that prefill
            if _truthy(value):
                knobs["prefill_graphs"] = _PREFILL_GRAPH_SWITCHES[key]
            continue
        if key in ("disable-cuda-graph", "enforce-eager"):
            if _truthy(value):
                knobs["graph_max_seqs"] = 0
            continue
        if key in _ARG_KNOBS:
            try:
                num = float(value)
            except (TypeError, ValueError):
                continue
            if num <= 0:  # -1 / 0: "no limit" or "disabled" (SGLang chunked-prefill-size -1)
                if key == "chunked-prefill-size":  # SGLang prefills whole prompts
                    knobs["chunked_prefill"] = False
                continue
            knob = _ARG_KNOBS[key]
            knobs[knob] = num if knob in ("memory_fraction", "kv_free_fraction") else int(num)
        elif key in ("kv-cache-dtype", "kv-cache-config.dtype") and str(value) != "auto":
            knobs["kv_dtype"] = str(value)
        elif key in ("no-enable-prefix-caching", "disable-radix-cache", "enable-prefix-caching",
                     "kv-cache-config.enable-block-reuse"):
            # the flag either disables caching when set, or enables it
            knobs["prefix_caching"] = _truthy(value) == (key in ("enable-prefix-caching",
                                                                  "kv-cache-config.enable-block-reuse"))
    # SGLang without chunked prefill: a step prefills up to max-prefill-tokens
    prefill_cap = knobs.pop("max_prefill_tokens", None)
    if prefill_cap and "max_num_batched_tokens" not in knobs:
        knobs["max_num_batched_tokens"] = prefill_cap
    return knobs


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("true", "1", "yes")
