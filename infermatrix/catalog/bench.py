"""The client settings a workload stands for at one concurrency: what `infermatrix run` measures
a level with, and what docs/catalog.md prints as the command to paste."""

from __future__ import annotations

from typing import Any

from .schema import Workload


def workload_config(wl: Workload, conc: int, base_url: str | None = None,
                    model: str | None = None, tokenizer: str | None = None) -> Any:
    """A client ``BenchConfig`` for ``wl`` at concurrency ``conc`` (tokenizer None: the model's)."""
    from ..client import BenchConfig  # the client is an independent package; import late

    return BenchConfig(
        backend="openai-chat" if wl.endpoint == "chat" else "vllm",
        base_url=base_url, model=model, tokenizer=tokenizer,
        dataset_name="random", random_input_len=wl.isl, random_output_len=wl.osl,
        # workloads draw lengths in [range_ratio × L, L] (InferenceMAX's benchmark_serving.py)
        random_range_ratio=wl.range_ratio, range_ratio_style="sglang",
        num_prompts=wl.num_prompts(conc),
        num_warmups=wl.num_warmups(conc), max_concurrency=conc, ignore_eos=wl.ignore_eos,
        max_error_rate=wl.max_error_rate, seed=conc, disable_tqdm=True,
        percentile_metrics=["ttft", "tpot", "itl", "e2el"], metric_percentiles=[50, 90, 99],
    )
