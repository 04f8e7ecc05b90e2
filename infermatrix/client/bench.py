"""``run_benchmark``: one benchmark run, whatever its dataset — a request list dispatched by
``runner`` or closed-loop multi-turn sessions (``sessions``) — to the result dict.

Above both: ``sessions`` reuses ``runner``'s model and tokenizer resolution, so the dispatch
between them lives here rather than in either."""

from __future__ import annotations

from typing import Any

from . import eventloop
from .config import BenchConfig
from .metrics import compute, per_request_details
from .multi_turn import run_multi_turn
from .result import build_result
from .runner import execute


async def run_benchmark(cfg: BenchConfig) -> dict[str, Any]:
    """Run the benchmark described by ``cfg`` and return the result dict (not written)."""
    if cfg.dataset_name == "multi-turn":  # closed-loop sessions: no request list to dispatch
        return await run_multi_turn(cfg)
    outcome = await execute(cfg)
    metrics = compute(
        outcome.records,
        outcome.t0,
        outcome.t_end,
        outcome.tokenizer,
        cfg.metric_percentiles,
        cfg.percentile_metrics,
        cfg.goodput,
    )
    if metrics["output_token_mismatch"]:
        outcome.notes.append(
            f"{metrics['output_token_mismatch']} requests: usage.completion_tokens and the "
            f"re-tokenized output ({outcome.tokenizer.name}) disagree; is --tokenizer the model's?"
        )
    details = per_request_details(outcome.records, outcome.tokenizer) if cfg.save_detailed else None
    return build_result(
        cfg,
        outcome.model_id,
        outcome.tokenizer.name,
        metrics,
        details,
        warmup_failed=outcome.warmup_failed,
        notes=outcome.notes,
        window=(outcome.t0, outcome.t_end),
    )


def run_benchmark_sync(cfg: BenchConfig) -> dict[str, Any]:
    return eventloop.run(run_benchmark(cfg))


