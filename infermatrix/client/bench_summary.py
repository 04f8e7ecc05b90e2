"""The summary `infermatrix bench` prints after a run, laid out like bench_serving's."""

from __future__ import annotations

from typing import Any


def format_summary(r: dict[str, Any]) -> str:
    def num(v: Any, fmt: str = ".2f") -> str:
        return "n/a" if v is None else format(v, fmt)

    lines = [f"{' Serving Benchmark Result ':=^60}"]
    rows: list[tuple[str, Any, str]] = [
        ("Successful requests:", r["completed"], "d"),
        ("Failed requests:", r["failed"], "d"),
        ("Benchmark duration (s):", r["duration"], ".2f"),
        ("Total input tokens:", r["total_input_tokens"], "d"),
        ("Total generated tokens:", r["total_output_tokens"], "d"),
        ("Request throughput (req/s):", r["request_throughput"], ".2f"),
        ("Output token throughput (tok/s):", r["output_throughput"], ".2f"),
        ("Peak output token throughput (tok/s):", r["max_output_tokens_per_s"], ".2f"),
        ("Total token throughput (tok/s):", r["total_token_throughput"], ".2f"),
        ("Mean / max concurrency:", None, ""),
    ]
    for label, val, fmt in rows:
        if label.startswith("Mean / max"):
            lines.append(f"{label:<42}{r['mean_concurrency']:.2f} / {r['max_concurrent_requests']}")
        else:
            lines.append(f"{label:<42}{num(val, fmt)}")
    if r.get("request_goodput") is not None:
        lines.append(f"{'Request goodput (req/s):':<42}{r['request_goodput']:.2f}")
    if r["failed"]:
        lines.append(f"{'Errors:':<42}{r['error_counts']}")
    if r["requests_retokenized"]:
        lines.append(f"{'Output counts re-tokenized (no usage):':<42}{r['requests_retokenized']}")
    if r["output_token_mismatch"]:
        lines.append(f"{'Usage vs re-tokenized mismatches:':<42}{r['output_token_mismatch']}")
    for metric, title in (
        ("ttft", "Time to First Token"),
        ("tpot", "Time per Output Token (excl. 1st token)"),
        ("itl", "Inter-token Latency (per event)"),
        ("e2el", "End-to-end Latency"),
    ):
        lines.append(f"{title:-^60}")
        for key in [k for k in r if k.endswith(f"_{metric}_ms") and r[k] is not None]:
            stat = key.split("_")[0]
            label = {"mean": "Mean", "median": "Median", "std": "Std"}.get(stat, stat.upper())
            lines.append(f"{label + ' ' + metric.upper() + ' (ms):':<42}{num(r[key])}")
    lag = r["schedule_lag"]
    lines.append(f"{'Client':-^60}")
    lines.append(f"{'Schedule lag p99 / max (ms):':<42}{num(lag['p99_ms'])} / {num(lag['max_ms'])}")
    lines.append(f"{'Slot wait mean (ms):':<42}{num(r['slot_wait']['mean_ms'])}")
    lines.append("=" * 60)
    return "\n".join(lines)


def format_agentic(result: dict[str, Any]) -> str:
    """The agentic block of a multi-turn result, as lines under the bench summary."""
    a = result.get("agentic") or {}

    def num(v: Any, fmt: str = ".2f") -> str:
        return "n/a" if v is None else format(v, fmt)

    rows = [
        ("Agents / sessions started:", f"{a.get('agents')} / {a.get('sessions_started')}"),
        ("Affinity:", a.get("affinity")),
        (
            "P25 / median output speed (tok/s):",
            f"{num(a.get('p25_output_speed'))} / {num(a.get('median_output_speed'))}",
        ),
        ("P95 TTFT (ms):", num(a.get("p95_ttft_ms"))),
        ("Mean input tokens:", num(a.get("mean_input_tokens"), ".0f")),
        ("Cached token ratio:", num(a.get("cached_token_ratio"), ".3f")),
        ("Exact output lengths:", f"{a.get('exact_output_len')} / {a.get('completed')}"),
    ]
    return "\n".join([f"{' Agentic sessions ':-^60}", *(f"{k:<42}{v}" for k, v in rows), "=" * 60])
