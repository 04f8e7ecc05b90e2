"""One step's batch as the step model sees it (its own module: the scheduler builds it, the
step model in operators.py reads it, and perf.py, which joins the two, re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BatchShape:
    """Aggregates of one step's batch; what the step model needs and nothing else."""

    tokens: int  # new tokens whose KV is computed (prefill chunks + one per decoding sequence)
    seqs: int  # sequences in the batch
    kv_read: int  # sum over sequences of the context attended (prior + new tokens)
    attn_pairs: float  # sum over new tokens of the positions each attends to
    draft_tokens: int = 0  # speculative tokens verified on top of ``tokens``
    # under attention DP, a step that prefills: the aggregates of the rank with the most new
    # tokens, whose attention-side work (projections, attention, dense MLP) the step waits for
    busiest: BatchShape | None = None
