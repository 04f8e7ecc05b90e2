"""Normalisation: every derived metric against numbers worked out by hand (docs/results.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from imx_results_data import DISAGG_BLOCK, RUN, make_raw

from infermatrix.errors import UsageError
from infermatrix.results.export import read_records_jsonl, write_records_csv, write_records_jsonl
from infermatrix.results.records import (
    ForeignResult,
    InvalidResult,
    Record,
    normalise,
    order_runs,
    run_order,
)

approx = pytest.approx


def test_aggregated_level_by_hand() -> None:
    r = normalise(make_raw(), source="x/conc-4.json")
    assert (r.key, r.natural_key) == ((RUN, r.job_id, 4), (r.recipe, "fixed-1k-1k", "h200-dgx", 4))
    assert (r.topology, r.gpus_total, r.status, r.source) == ("tp8", 8, "ok", "x/conc-4.json")
    assert r.input_throughput == approx(900.0)  # 90,000 input tokens / 100 s
    assert r.output_tput_per_gpu == approx(450.0 / 8)
    assert r.input_tput_per_gpu == approx(900.0 / 8)
    assert r.total_tput_per_gpu == approx(1350.0 / 8)
    assert r.interactivity == approx(50.0)  # 1000 / 20 ms
    assert r.e2e_interactivity == approx(40.0)  # 500 tokens per request / 12.5 s
    assert r.error_rate == approx(0.1)  # 10 / (90 + 10)
    # 8 GPUs × $3.50 an hour = $28/h for 450 tok/s = 1.62 M tokens an hour
    assert r.usd_per_m_output_tokens == approx(28.0 / 1.62)
    assert r.usd_per_m_total_tokens == approx(28.0 / (1350 * 3600) * 1e6)
    assert r.energy_j is r.j_per_output_token is r.j_per_token is None  # nothing measured


def test_disaggregated_divides_by_each_pool() -> None:
    r = normalise(make_raw(DISAGG_BLOCK))
    assert r.mode == "disaggregated" and (r.gpus_total, r.gpus_prefill, r.gpus_decode) == (12, 4, 8)
    assert r.topology == "P 1×tp4 + D 2×tp4 ep4 adp"
    assert r.output_tput_per_gpu == approx(450.0 / 8)  # decode GPUs produce the output
    assert r.input_tput_per_gpu == approx(900.0 / 4)  # prefill GPUs take the input
    assert r.total_tput_per_gpu == approx(1350.0 / 12)  # every GPU of every pool
    assert r.usd_per_m_output_tokens == approx(3.5 * 12 / (450 * 3600) * 1e6)  # all GPUs paid


def test_latency_statistics_are_kept_under_their_names() -> None:
    r = normalise(make_raw())
    assert r.latency["p99.9_itl_ms"] == 80.0 and r.latency["median_itl_per_token_ms"] == 19.5
    assert r.metric("median_ttft_ms") == 500.0 and r.metric("p99_e2el_ms") == 16_000.0
    assert "schedule_lag" not in r.latency and r.metric("schedule_lag") is None
    assert r.metric("no_such_metric") is None and r.metric("recipe") is None


def test_energy_measured_or_from_mean_power() -> None:
    measured = normalise(make_raw({"energy_j": 720_000.0, "avg_power_w": 7000.0}))
    assert measured.energy_j == 720_000.0
    assert measured.j_per_output_token == approx(16.0)  # 720 kJ / 45,000 output tokens
    assert measured.j_per_token == approx(720_000 / 135_000)
    power_only = normalise(make_raw({"avg_power_w": 5000.0}))
    assert power_only.energy_j == approx(500_000.0)  # 5 kW × 100 s


def test_what_cannot_be_computed_is_null_not_zero() -> None:
    no_tpot = normalise(make_raw(median_tpot_ms=None, median_e2el_ms=None))
    assert no_tpot.interactivity is None and no_tpot.e2e_interactivity is None
    stalled = normalise(make_raw(output_throughput=0.0, total_token_throughput=0.0))
    assert stalled.output_tput_per_gpu == 0.0  # measured: nothing came out
    assert stalled.usd_per_m_output_tokens is None and stalled.usd_per_m_total_tokens is None
    unpriced = normalise(make_raw({"usd_per_gpu_hour": None}))
    assert unpriced.usd_per_m_output_tokens is None
    nothing = normalise(make_raw({"status": "failed", "error": "server died"}, completed=0,
                                 failed=0, total_output_tokens=0))
    assert nothing.error_rate == 1.0 and nothing.e2e_interactivity is None and not nothing.ok
    assert normalise(make_raw({"energy_j": 10.0}, total_output_tokens=0)).j_per_output_token is None


def test_input_throughput_falls_back_to_total_minus_output() -> None:
    r = normalise(make_raw(total_input_tokens=None))
    assert r.input_throughput == approx(1350.0 - 450.0)
    neither = make_raw(total_input_tokens=None, total_token_throughput=None)
    assert normalise(neither).input_throughput is None


@pytest.mark.parametrize(("block", "message"), [
    ({"concurrency": 0}, "concurrency"),
    ({"concurrency": 2**40}, "concurrency"),
    ({"gpus": {"total": 0}}, "no GPUs"),
    ({"gpus": None}, "gpus"),
    ({"mode": "hybrid"}, "unknown mode"),
    ({"mode": "disaggregated"}, "prefill and decode"),
    ({"run_id": ""}, "run_id"),
    ({"status": "maybe"}, "status"),
    ({"isl": "long"}, "isl"),
    ({"pools": [{"tp": 0}]}, "pools"),
])
def test_unusable_blocks_are_invalid(block: dict, message: str) -> None:
    with pytest.raises(InvalidResult, match=message):
        normalise(make_raw(block))


def test_metrics_of_the_wrong_type_are_invalid() -> None:
    with pytest.raises(InvalidResult, match="duration"):
        normalise(make_raw(duration="long"))


def test_foreign_documents() -> None:
    plain = make_raw()
    del plain["infermatrix"]
    for doc in (plain, [1, 2], make_raw({"kind": "job-manifest"}), {"infermatrix": "x"}):
        with pytest.raises(ForeignResult):
            normalise(doc)


def test_runs_are_ordered_by_earliest_start_then_id() -> None:
    def rec(run: str, started: str | None) -> Record:
        return normalise(make_raw({"run_id": run, "started_at": started}))

    records = [rec("b", "2026-11-22T03:00:00Z"), rec("b", "2026-11-21T23:00:00Z"),
               rec("a", "2026-11-22T00:00:00+00:00"), rec("c", "2026-11-22T00:00:00Z"),
               rec("0-no-time", None)]
    assert run_order(records) == ["b", "a", "c", "0-no-time"]
    assert order_runs([]) == []


def test_jsonl_and_csv_round_trip(tmp_path: Path) -> None:
    records = [normalise(make_raw()), normalise(make_raw(DISAGG_BLOCK))]
    back = read_records_jsonl(write_records_jsonl(records, tmp_path / "r.jsonl"))
    assert back == records
    lines = write_records_csv(records, tmp_path / "r.csv").read_text().splitlines()
    header = lines[0].split(",")
    assert len(lines) == 3
    assert {"run_id", "output_tput_per_gpu", "pools", "p99.9_itl_ms"} <= set(header)
    assert "latency" not in header
    (tmp_path / "bad.jsonl").write_text(records[0].model_dump_json() + "\n{\"run_id\": 3}\n")
    with pytest.raises(UsageError, match="bad.jsonl:2"):
        read_records_jsonl(tmp_path / "bad.jsonl")


def test_topology_labels() -> None:
    from infermatrix.results.records import Pool, topology_label

    assert topology_label("aggregated", [Pool(tp=8)]) == "tp8"
    assert topology_label("aggregated", [Pool(instances=2, tp=4, pp=2, dp=2, ep=8)]) == \
        "2×tp4 pp2 dp2 ep8"
    assert topology_label("aggregated", [Pool(tp=8, dp=2, attention_dp=True)]) == "tp8 dp2 adp"
    assert topology_label("disaggregated", [Pool(role="prefill", tp=4),
                                            Pool(role="decode", instances=2, tp=8, dp=8, ep=8,
                                                 attention_dp=True)]) == \
        "P 1×tp4 + D 2×tp8 ep8 adp"
