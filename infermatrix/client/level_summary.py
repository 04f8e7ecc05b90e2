"""A closed-loop level's numbers (measured turns only) and its result document."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import asdict
from typing import Any

from .level_records import LevelOutcome
from .metrics import percentile

SCHEMA = "infermatrix-agentic-level"
SCHEMA_VERSION = 1


def summarize(out: LevelOutcome) -> dict[str, Any]:
    """The level's numbers (only measured turns), JSON-ready."""
    ms = [t for t in out.turns if t.measured]
    ok = [t for t in ms if t.error is None]
    ttft = sorted(t.ttft * 1000.0 for t in ok if t.ttft is not None)
    speed = sorted(t.output_speed for t in ok if t.output_speed is not None)
    e2el = sorted(t.e2el * 1000.0 for t in ok if t.e2el is not None)
    reported = [t for t in ok if t.cached_tokens is not None]
    in_server = sum(t.input_tokens_server or t.input_tokens for t in reported)
    out_tokens = sum(t.output_tokens or 0 for t in ok)
    exact = sum(t.output_tokens == t.output_tokens_requested for t in ok)

    def pct(xs: list[float], p: float) -> float | None:
        return percentile(xs, p) if xs else None

    return {
        "agents": out.plan.agents,
        "window_s": out.window_s,
        "requests": len(ms),
        "completed": len(ok),
        "failed": len(ms) - len(ok),
        "error_rate": (len(ms) - len(ok)) / len(ms) if ms else 0.0,
        "errors": dict(sorted(Counter(t.error for t in ms if t.error).items())),
        "sessions_started": out.sessions_started,
        "unmeasured_requests": len(out.turns) - len(ms),
        "mean_input_tokens": statistics.fmean(t.input_tokens for t in ok) if ok else None,
        "cached_tokens_reported": len(reported),
        "cached_token_ratio": (sum(t.cached_tokens or 0 for t in reported) / in_server)
        if in_server
        else None,
        "output_throughput": out_tokens / out.window_s,
        "exact_output_len": exact,
        "p25_output_speed": pct(speed, 25),
        "median_output_speed": pct(speed, 50),
        "median_ttft_ms": pct(ttft, 50),
        "p95_ttft_ms": pct(ttft, 95),
        "p99_ttft_ms": pct(ttft, 99),
        "median_e2el_ms": pct(e2el, 50),
    }


def level_result(out: LevelOutcome, *, with_turns: bool = False) -> dict[str, Any]:
    """The level's result document (schema ``infermatrix-agentic-level``)."""
    res: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "model_id": out.model,
        "tokenizer_id": out.tokenizer,
        "source": out.source,
        "affinity": out.affinity,
        "plan": asdict(out.plan),
        "max_concurrency": out.plan.agents,
        **summarize(out),
    }
    if with_turns:
        res["turns"] = [asdict(t) for t in out.turns]
    return res
