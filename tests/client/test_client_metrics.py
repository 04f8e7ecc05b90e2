"""Metric definitions (docs/metrics.md) on hand-built records with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from infermatrix.client.metrics import compute, concurrency, derive, percentile
from infermatrix.client.records import RequestRecord
from infermatrix.client.tokenizer import WordTokenizer

TOK = WordTokenizer()


def rec(
    start: float,
    times: list[float],
    texts: list[str],
    usage: int | None = None,
    error: str | None = None,
    prompt_len: int = 10,
    end: float | None = None,
) -> RequestRecord:
    r = RequestRecord(index=0, prompt_len=prompt_len, output_len_requested=len(times))
    r.deadline = r.dispatched = start
    r.start = start
    r.end = end if end is not None else (times[-1] if times else start) + 0.001
    r.event_times = list(times)
    r.event_texts = list(texts)
    r.usage_completion_tokens = usage
    r.error = error
    return r


def test_ttft_tpot_itl_e2el() -> None:
    r = rec(1.0, [1.2, 1.3, 1.45, 1.5], ["a ", "b ", "c ", "d "], usage=4)
    d = derive(r, TOK)
    assert d.ttft == pytest.approx(0.2)
    assert d.e2el == pytest.approx(0.5)
    assert d.tpot == pytest.approx(0.3 / 3)
    assert d.itl == pytest.approx([0.1, 0.15, 0.05])
    assert d.output_tokens == 4 and d.from_usage


def test_per_token_itl_splits_multi_token_events() -> None:
    r = rec(0.0, [0.1, 0.4, 0.5], ["a ", "b c d ", "e "], usage=5)
    d = derive(r, TOK)
    assert d.itl == pytest.approx([0.3, 0.1])
    assert d.itl_per_token == pytest.approx([0.1, 0.1, 0.1, 0.1])
    assert d.tpot == pytest.approx(0.4 / 4)


def test_usage_missing_or_zero_falls_back_to_retokenized() -> None:
    for usage in (None, 0):
        d = derive(rec(0.0, [0.1, 0.2], ["a b ", "c "], usage=usage), TOK)
        assert d.output_tokens == 3 and not d.from_usage


def test_single_token_has_no_tpot() -> None:
    d = derive(rec(0.0, [0.1], ["a"], usage=1), TOK)
    assert d.tpot is None


def test_percentile_matches_numpy() -> None:
    xs = sorted(np.random.default_rng(0).random(101).tolist())
    for p in (1, 25, 50, 90, 99, 99.9):
        assert percentile(xs, p) == pytest.approx(float(np.percentile(xs, p)))


def test_concurrency() -> None:
    rs = [
        rec(0.0, [1.0], ["a"], end=1.0),
        rec(0.5, [1.5], ["a"], end=1.5),
        rec(2.0, [3.0], ["a"], end=3.0),
    ]
    mean, peak = concurrency(rs, 3.0)
    assert peak == 2
    assert mean == pytest.approx(3.0 / 3.0)


def test_compute_aggregates() -> None:
    rs = [
        rec(0.0, [0.1, 0.2, 0.3], ["a ", "b ", "c "], usage=3),
        rec(0.0, [0.2, 0.4, 0.6], ["a ", "b ", "c "], usage=3),
        rec(0.0, [], [], error="http_500"),
        rec(0.0, [], [], error="timeout_idle"),
    ]
    m = compute(rs, 0.0, 1.0, TOK, [50, 99], ["ttft", "tpot", "itl", "e2el"], {"ttft": 150})
    assert m["completed"] == 2 and m["failed"] == 2 and m["error_rate"] == 0.5
    assert m["error_counts"] == {"http_500": 1, "timeout_idle": 1}
    assert m["total_input_tokens"] == 20  # completed only
    assert m["total_output_tokens"] == 6
    assert m["output_throughput"] == 6.0 and m["request_throughput"] == 2.0
    assert m["total_token_throughput"] == 26.0
    assert m["mean_ttft_ms"] == pytest.approx(150)
    assert m["median_tpot_ms"] == pytest.approx(150)
    assert m["p99_e2el_ms"] == pytest.approx(300 + 300 * 0.99)
    assert m["mean_itl_ms"] == pytest.approx(150)
    assert m["request_goodput"] == 1.0  # only the first meets ttft <= 150 ms
    assert m["max_output_tokens_per_s"] == 6
    assert m["interactivity"] == pytest.approx(1000 / 150)
    assert "p50_ttft_ms" in m and "p99_itl_per_token_ms" in m


def test_nothing_completed_gives_none_not_zero() -> None:
    m = compute([rec(0.0, [], [], error="http_500")], 0.0, 1.0, TOK, [99], ["ttft"], {})
    assert m["completed"] == 0 and m["mean_ttft_ms"] is None and m["median_tpot_ms"] is None


def test_itl_per_token_spreads_a_gap_over_its_event_and_numpy_arrays_are_taken_as_is() -> None:
    one = [rec(0.0, [0.1, 0.2, 0.4], ["a ", "b ", "c "], usage=3)]
    m = compute(one, 0.0, 1.0, TOK, [50], ["itl"], {})
    assert m["mean_itl_per_token_ms"] == m["mean_itl_ms"] == pytest.approx(150)
    assert m["p50_itl_per_token_ms"] == m["p50_itl_ms"]
    # two tokens in the second event: its 100 ms gap counts as 2 × 50 ms per token
    multi = [rec(0.0, [0.1, 0.2, 0.4], ["a ", "b c ", "d "], usage=4)]
    m = compute(multi, 0.0, 1.0, TOK, [50], ["itl"], {})
    assert m["mean_itl_ms"] == pytest.approx(150)
    assert m["mean_itl_per_token_ms"] == pytest.approx((50 + 50 + 200) / 3)
    assert m["max_output_tokens_per_s"] == 4
    arr = rec(0.0, [0.1, 0.2, 0.4], ["a ", "b ", "c "], usage=3)
    arr.event_times = np.array(arr.event_times)  # what a virtual-time level hands over
    assert compute([arr], 0.0, 1.0, TOK, [50], ["itl"], {}) == compute(one, 0.0, 1.0, TOK, [50], ["itl"], {})
