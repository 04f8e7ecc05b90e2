"""Metrics from request records, exactly as docs/metrics.md defines them. Runs after the clock
stops, so tokenization and statistics never delay a timestamp."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .records import RequestRecord
from .tokenizer import Tokenizer

# A usage count and the re-tokenized count "disagree" beyond this (see docs/metrics.md).
MISMATCH_ABS = 2
MISMATCH_REL = 0.05


@dataclass(slots=True)
class Derived:
    """Per-request numbers derived from one successful record (seconds)."""

    ttft: float
    e2el: float
    output_tokens: int
    retokenized: int
    from_usage: bool
    tpot: float | None
    # numpy arrays: a long response has one entry per token, and Python lists of millions of
    # floats made the statistics the slowest part of a virtual-time sweep
    itl: np.ndarray = field(default_factory=lambda: np.zeros(0))
    itl_per_token: np.ndarray = field(default_factory=lambda: np.zeros(0))
    event_tokens: np.ndarray | None = None  # tokens per event; None: one each (no array)

    @property
    def mismatch(self) -> bool:
        if not self.from_usage:
            return False
        return abs(self.output_tokens - self.retokenized) > max(
            MISMATCH_ABS, MISMATCH_REL * self.output_tokens
        )


def derive(rec: RequestRecord, tok: Tokenizer, retokenized: int | None = None) -> Derived:
    """Per-request metrics of a successful record. ``retokenized`` (the re-tokenized length of
    the generated text) may be passed in when computed in a batch."""
    times = np.asarray(rec.event_times, dtype=np.float64)
    ttft = float(times[0]) - rec.start
    e2el = float(times[-1]) - rec.start
    retok = tok.count(rec.generated_text) if retokenized is None else retokenized
    from_usage = rec.usage_completion_tokens is not None and rec.usage_completion_tokens > 0
    out = rec.usage_completion_tokens if from_usage else retok
    assert out is not None
    tpot = (e2el - ttft) / (out - 1) if out > 1 else None
    itl = np.diff(times)
    event_tokens: np.ndarray | None
    if out == len(times):  # one token per event: nothing to tokenize
        event_tokens = None
        per_token = itl
    else:
        event_tokens = np.maximum(1, np.asarray(tok.count_many(rec.event_texts), dtype=np.int64))
        k = event_tokens[1:]
        per_token = np.repeat(itl / k, k)  # a gap is shared by the tokens of its event
    return Derived(ttft, e2el, out, retok, from_usage, tpot, itl, per_token, event_tokens)


def percentile(sorted_xs: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_xs) == 1:
        return sorted_xs[0]
    k = (len(sorted_xs) - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (k - lo)


def pct_key(p: float) -> str:
    return f"p{int(p)}" if float(p).is_integer() else f"p{p:g}"


def stats_ms(
    name: str, xs_s: Sequence[float], percentiles: Sequence[float], with_pcts: bool = True
) -> dict[str, float | None]:
    """mean/median/std/pNN of ``xs_s`` (seconds) as ``*_{name}_ms`` keys; None when empty."""
    out: dict[str, float | None] = {}
    xs = np.asarray(xs_s, dtype=np.float64) * 1000.0  # a fresh array: ours to reorder
    pcts = list(percentiles) if with_pcts else []
    mean = float(xs.mean()) if xs.size else None
    std = float(xs.std()) if xs.size else None
    # numpy's default percentile is the linear interpolation of ``percentile`` above; it may
    # partition ``xs`` in place (the mean and std, whose sums depend on the order, come first)
    values = (np.percentile(xs, [50, *pcts], overwrite_input=True).tolist() if xs.size
              else [None] * (1 + len(pcts)))
    out[f"mean_{name}_ms"] = mean
    out[f"median_{name}_ms"] = values[0]
    out[f"std_{name}_ms"] = std
    for p, v in zip(pcts, values[1:], strict=True):
        out[f"{pct_key(p)}_{name}_ms"] = v
    return out


def summary_ms(xs_s: Sequence[float]) -> dict[str, float | None]:
    """{mean_ms, p50_ms, p99_ms, max_ms} of ``xs_s`` (seconds); None when empty. Kept under a
    top-level key that does not end in ``ms`` (post-processing divides every such key by 1000)."""
    xs = sorted(x * 1000.0 for x in xs_s)
    if not xs:
        return {"mean_ms": None, "p50_ms": None, "p99_ms": None, "max_ms": None}
    return {
        "mean_ms": statistics.fmean(xs),
        "p50_ms": percentile(xs, 50),
        "p99_ms": percentile(xs, 99),
        "max_ms": xs[-1],
    }


def concurrency(records: Sequence[RequestRecord], duration: float) -> tuple[float, int]:
    """(time-weighted mean in-flight requests, max in-flight) over the benchmark."""
    if not records or duration <= 0:
        return 0.0, 0
    busy = sum(r.end - r.start for r in records)
    edges = sorted(
        [(r.start, 1) for r in records] + [(r.end, -1) for r in records], key=lambda e: (e[0], e[1])
    )
    cur = peak = 0
    for _, step in edges:
        cur += step
        peak = max(peak, cur)
    return busy / duration, peak


def peak_output_rate(pairs: Sequence[tuple[RequestRecord, Derived]], t0: float) -> float:
    """Largest number of output tokens received in any 1-second bucket since t0."""
    if not pairs:
        return 0.0
    times = np.concatenate([np.asarray(rec.event_times, dtype=np.float64) for rec, _ in pairs])
    times -= t0  # in place: a virtual level holds millions of token times
    buckets = times.astype(np.int64)  # as int(): toward zero
    lowest = buckets.min()
    if lowest:  # bincount counts from 0; where the first bucket starts does not change the peak
        buckets -= lowest
    weights = None  # one token per event: count events
    if any(d.event_tokens is not None for _, d in pairs):
        weights = np.concatenate([np.ones(len(rec.event_times), dtype=np.int64)
                                  if d.event_tokens is None else d.event_tokens for rec, d in pairs])
    return float(np.bincount(buckets, weights=weights).max())


def compute(
    records: Sequence[RequestRecord],
    t0: float,
    t_end: float,
    tok: Tokenizer,
    percentiles: Sequence[float],
    pct_metrics: Sequence[str],
    goodput: dict[str, float],
    retokenized: Sequence[int] | None = None,
) -> dict[str, Any]:
    """The level's metrics. ``retokenized``: the re-tokenized output length of each successful
    record, in order, when the caller knows it without tokenizing (the simulated engine's text
    is one word per token)."""
    duration = t_end - t0
    ok = [r for r in records if r.ok]
    failed = [r for r in records if not r.ok]
    retok = (tok.count_many([r.generated_text for r in ok])  # one batch: fast with `tokenizers`
             if retokenized is None else retokenized)
    pairs = [(r, derive(r, tok, n)) for r, n in zip(ok, retok, strict=True)]
    ds = [d for _, d in pairs]
    total_in = sum(r.prompt_len for r in ok)
    total_out = sum(d.output_tokens for d in ds)
    res: dict[str, Any] = {
        "duration": duration,
        "completed": len(ok),
        "failed": len(failed),
        "error_rate": len(failed) / len(records) if records else 0.0,
        # failure kind -> count ("errors" is vLLM's per-request list, see per_request_details)
        "error_counts": dict(sorted(Counter(r.error for r in failed).items())),  # type: ignore[arg-type]
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration if duration > 0 else 0.0,
        "output_throughput": total_out / duration if duration > 0 else 0.0,
        "total_token_throughput": (total_in + total_out) / duration if duration > 0 else 0.0,
    }
    server_in = [r.usage_prompt_tokens for r in ok]
    res["total_input_tokens_server"] = sum(server_in) if ok and None not in server_in else None  # type: ignore[arg-type]
    res["output_tokens_from_usage"] = sum(d.from_usage for d in ds)
    # requests whose count came from re-tokenizing (no usage); SGLang's
    # total_output_tokens_retokenized is the re-tokenized token total, as here
    res["requests_retokenized"] = sum(not d.from_usage for d in ds)
    res["total_output_tokens_retokenized"] = sum(d.retokenized for d in ds)
    res["output_token_mismatch"] = sum(d.mismatch for d in ds)

    series = {
        "ttft": [d.ttft for d in ds],
        "tpot": [d.tpot for d in ds if d.tpot is not None],
        "itl": _joined([d.itl for d in ds]),
        "e2el": [d.e2el for d in ds],
    }
    for name, xs in series.items():
        res.update(stats_ms(name, xs, percentiles, with_pcts=name in pct_metrics))
    if all(d.itl_per_token is d.itl for d in ds):  # one token per event: the same series
        res.update({k.replace("_itl_ms", "_itl_per_token_ms"): v for k, v in res.items()
                    if k.endswith("_itl_ms")})
    else:
        res.update(
            stats_ms(
                "itl_per_token",
                _joined([d.itl_per_token for d in ds]),
                percentiles,
                with_pcts="itl" in pct_metrics,
            )
        )
    med_tpot = res["median_tpot_ms"]
    res["interactivity"] = 1000.0 / med_tpot if med_tpot else None  # tok/s/user
    speeds = sorted(d.output_tokens / (d.e2el - d.ttft) for d in ds if d.e2el > d.ttft)
    res["median_output_speed"] = percentile(speeds, 50) if speeds else None
    res["p25_output_speed"] = percentile(speeds, 25) if speeds else None

    res["request_goodput"] = _goodput(ds, goodput, duration) if goodput else None
    res["schedule_lag"] = summary_ms([r.dispatched - r.deadline for r in records])
    res["slot_wait"] = summary_ms([r.start - r.dispatched for r in records])
    mean_c, max_c = concurrency(records, duration)
    res["mean_concurrency"] = mean_c
    res["max_concurrent_requests"] = max_c
    res["max_output_tokens_per_s"] = peak_output_rate(pairs, t0)
    # malformed SSE events (not UTF-8 or not JSON); each fails its request ("bad_event")
    res["bad_events"] = sum(r.bad_events for r in records)
    res["request_samples"] = request_samples(ds)
    return res


def _sig(x: float | None, scale: float = 1000.0) -> float | None:
    return None if x is None else float(f"{x * scale:.4g}")


def request_samples(ds: Sequence[Derived]) -> dict[str, list[float | None]]:
    """Each successful request's TTFT, TPOT and E2E latency (ms, 4 significant digits; TPOT
    None for a one-token answer) and output tokens: the per-request samples a level's
    uncertainty is drawn from (a bootstrap, docs/results.md). A few bytes per request, unlike
    bench_serving's --save-detailed lists (every token's latency and the text)."""
    return {"ttft_ms": [_sig(d.ttft) for d in ds], "tpot_ms": [_sig(d.tpot) for d in ds],
            "e2el_ms": [_sig(d.e2el) for d in ds],
            "output_tokens": [d.output_tokens for d in ds]}


def _joined(arrays: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0)


def _goodput(ds: Sequence[Derived], slo_ms: dict[str, float], duration: float) -> float:
    def good(d: Derived) -> bool:
        vals = {"ttft": d.ttft, "tpot": d.tpot, "e2el": d.e2el}
        # A one-token answer has no TPOT: it cannot violate a TPOT SLO.
        return all(vals[k] is None or vals[k] * 1000.0 <= ms for k, ms in slo_ms.items())  # type: ignore[operator]

    return sum(good(d) for d in ds) / duration if duration > 0 else 0.0


def per_request_details(records: Sequence[RequestRecord], tok: Tokenizer) -> dict[str, list[Any]]:
    """bench_serving's --save-detailed lists, one entry per request (None where it failed)."""
    out: dict[str, list[Any]] = {
        k: []
        for k in (
            "input_lens",
            "output_lens",
            "ttfts",
            "itls",
            "generated_texts",
            "errors",
            "schedule_lags",
            "slot_waits",
        )
    }
    for r in records:
        d = derive(r, tok) if r.ok else None
        out["input_lens"].append(r.prompt_len)
        out["output_lens"].append(d.output_tokens if d else 0)
        out["ttfts"].append(d.ttft if d else None)
        out["itls"].append(d.itl.tolist() if d else [])
        out["generated_texts"].append(r.generated_text)
        out["errors"].append(r.error_detail if r.error else "")
        out["schedule_lags"].append(r.dispatched - r.deadline)
        out["slot_waits"].append(r.start - r.dispatched)
    return out
