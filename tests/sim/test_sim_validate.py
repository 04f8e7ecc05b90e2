"""`infermatrix sim validate`: the published-results table, its schema, and the report split's
accuracy (CI fails when the simulator regresses against published numbers it was never fitted
on)."""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from pydantic import ValidationError
from sim_helpers import catalog

from infermatrix.catalog.yamlsrc import CatalogError
from infermatrix.sim.published import (
    PublishedRow,
    load_published,
    out_of_source,
    setup_key,
    source_key,
)
from infermatrix.sim.published_requests import row_lengths
from infermatrix.sim.tables import EFFICIENCY_FILE, default_tables, load_tables, table_numbers
from infermatrix.sim.validate import run_rows, sim_config
from infermatrix.sim.validate_score import Outcome, summarise
from infermatrix.sim.virtual import SimRequest, simulate

# The table is split by source (published.yaml's header): every report row is out of source,
# never fitted on and sharing no page or setup with a calibrate row (docs/sim.md "Out of
# source"). Its throughput and TPOT rows are held to a little under what they read on
# 2026-11-27 (52 rows: 28% median, 90% within 2x, with the measured Hopper operators and the
# sustained clock; 31% / 87% at the start of that day). The issue's target is 20% / 90%; these
# bounds keep the figures from regressing while the mechanisms are added (2026-11-28, with the
# measured sustained clock on the GEMMs and the prefill attention: 54 rows, 48 within 2x; with
# 4-bit experts on Hopper measured, the third session of 2026-11-28: 20% median, 48 within 2x;
# with vLLM's FlashMLA sparse head padding, the fourth: 19% median, 49 of 54 within 2x).
OOS_MAX_MEDIAN_ERROR = 0.22
OOS_MIN_WITHIN_2X = 0.88
# The calibrate rows are what the fitted values answer to: the first table's (its sources
# below) keep issue 14's acceptance bounds (median |error| <= 25%, >= 80% within 2x), all of
# them a little under what they read (300 rows: 16% median, 91% within 2x on 2026-11-27). A
# change that makes the model worse than this fails CI.
MAX_MEDIAN_ERROR = 0.25
MIN_WITHIN_2X = 0.80
FIRST_TABLE_SOURCES = ("nvidia.github.io", "www.besthub.dev", "www.hiascend.com",
                       "artificialanalysis.ai")
ALL_MAX_MEDIAN_ERROR = 0.20
ALL_MIN_WITHIN_2X = 0.88
# TTFT rows (35 out of source: dstack's DeepSeek-R1 and 405B CSVs, GPUStack's pages, one
# InferenceX run; docs/sim.md "TTFT and queueing") are held apart, to a little under what they
# read on 2026-11-27: 43% median, 51% within 2x. The issue's target, a 30% median, is held
# since the 4-bit Hopper expert rows (2026-11-28: 22% median, 66% within 2x; 86% with February
# 2025's Triton MoE on AMD builds without AITER); the misses left are the prefill step's cost on
# 2025 builds and SGLang's per-rank DP scheduling, named in the docs.
TTFT_MAX_MEDIAN_ERROR = 0.30
TTFT_MIN_WITHIN_2X = 0.80
# All out-of-source rows together, held to issue 32's own bounds since the fourth session of
# 2026-11-28 met them (19.7% median, 81 of 89 within 2x): what `sim validate --check` checks.
ISSUE_MAX_MEDIAN_ERROR = 0.20
ISSUE_MIN_WITHIN_2X = 0.90


def test_published_table_is_large_sourced_and_split() -> None:
    rows = load_published()
    assert len(rows) >= 25
    assert all(r.source.startswith("http") for r in rows)
    splits = {r.split for r in rows}
    assert splits == {"calibrate", "report"}
    report = [r for r in rows if r.split == "report"]
    assert len(report) >= 12
    # every row names a deployment the catalog knows
    cat = catalog()
    for r in rows:
        assert r.hardware in cat.hardware and r.model in cat.models, r.id
        assert r.recipe is None or r.recipe in cat.recipes, r.id


def test_a_bad_table_row_is_reported_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "published.yaml"
    bad.write_text("- id: x\n  split: report\n  source: https://example.org\n  hardware: H200\n"
                   "  model: m\n  engine: vllm\n  engine_version: '1'\n  precision: fp8\n"
                   "  parallel: {tp: 2}\n  isl: 10\n  osl: 10\n  metric: tpot_ms\n  value: -3\n")
    with pytest.raises(CatalogError) as exc:
        load_published(bad)
    assert any(p.line == 13 and "value" in p.field for p in exc.value.problems), exc.value.problems


def test_an_unquoted_version_is_refused_not_misread(tmp_path: Path) -> None:
    """YAML reads a bare 0.10 as the number 0.1, which would date a row before 0.9: the row is
    refused at its line with how to write it."""
    bad = tmp_path / "published.yaml"
    bad.write_text("- id: x\n  source: https://example.org\n  hardware: H200\n"
                   "  model: deepseek-r1-0528\n  engine: SGLang\n  engine_version: 0.10\n"
                   "  precision: fp8\n  parallel: TP8\n  isl: 10\n  osl: 10\n"
                   "  concurrency: 1\n  metric: tpot_ms\n  value: 3\n")
    with pytest.raises(CatalogError) as exc:
        load_published(bad)
    assert [(p.line, "quote" in p.message) for p in exc.value.problems] == [(6, True)]
    bad.write_text(bad.read_text().replace("engine_version: 0.10", "engine_version: '0.10'"))
    assert load_published(bad)[0].engine_version == "0.10"


def test_a_bad_efficiency_table_is_reported_with_file_and_line(tmp_path: Path) -> None:
    text = EFFICIENCY_FILE.read_text()
    broken = re.sub(r"compute_eff: [0-9.]+", "compute_eff: 1.5", text, count=1)
    path = tmp_path / "efficiency.yaml"
    path.write_text(broken)
    with pytest.raises(CatalogError) as exc:
        load_tables(path)
    line = broken.splitlines().index("    compute_eff: 1.5") + 1
    assert [p.line for p in exc.value.problems] == [line]


def test_a_since_row_needs_an_engine_and_a_version(tmp_path: Path) -> None:
    """``since`` dates an engine's builds: without the engine, or with no version in it, the
    row is refused at its line, as any other table mistake."""
    text = EFFICIENCY_FILE.read_text()
    assert '    engine: sglang\n    since: "0.5.9"\n' in text
    for broken_row, field in (('    since: "0.5.9"\n', "since"),
                              ('    engine: sglang\n    since: "latest"\n', "since")):
        path = tmp_path / "efficiency.yaml"
        path.write_text(text.replace('    engine: sglang\n    since: "0.5.9"\n', broken_row, 1))
        with pytest.raises(CatalogError) as exc:
            load_tables(path)
        assert any(field in p.field or field in p.message for p in exc.value.problems), \
            exc.value.problems
        assert all(p.line for p in exc.value.problems)


def test_a_before_row_needs_an_engine_and_builds_left_to_describe(tmp_path: Path) -> None:
    """``before`` dates an engine's builds from above: without the engine, or with a ``since``
    at or above it (no build left), the row is refused at its line."""
    text = EFFICIENCY_FILE.read_text()
    dated = '    engine: vllm\n    before: "0.8.0"\n'
    assert dated in text
    for broken_row in ('    before: "0.8.0"\n', dated + '    since: "0.8.0"\n'):
        path = tmp_path / "efficiency.yaml"
        path.write_text(text.replace(dated, broken_row, 1))
        with pytest.raises(CatalogError) as exc:
            load_tables(path)
        assert any("before" in p.field or "before" in p.message for p in exc.value.problems), \
            exc.value.problems
        assert all(p.line for p in exc.value.problems)


def test_a_published_runs_version_picks_its_builds_rows() -> None:
    """The same H200 deployment simulated as SGLang 0.4.3 (the Triton fused MoE of early 2025),
    0.5.3 (the undated Hopper FP8 expert row) and 0.5.12 (the 2026 builds' row): the version a
    source states reaches the step model; the newest build decodes faster at low concurrency,
    as InferenceX measured it, and the oldest prefills slower; an unknown version reads as the
    undated row."""
    row = next(r for r in load_published() if r.id == "ifx-r1-h200-fp8-sglang-tp8-1024-1024-c4")
    builds = [row] + [row.model_copy(update={"engine_version": v})
                      for v in ("0.4.3", "0.5.3", "unstated")]
    cat = catalog()
    assert sim_config(cat, row).engine_version == "0.5.12"
    tpot, ttft = {}, {}
    for r in builds:
        run = simulate(sim_config(cat, r), [SimRequest(1000, 200) for _ in range(4)], concurrency=4)
        tpot[r.engine_version], ttft[r.engine_version] = run.median("tpot"), run.median("ttft")
    assert tpot["0.5.12"] < 0.7 * tpot["0.5.3"]
    assert tpot["unstated"] == tpot["0.5.3"] and ttft["unstated"] == ttft["0.5.3"]
    assert ttft["0.4.3"] > 1.5 * ttft["0.5.3"]


@pytest.mark.slow  # minutes: every report row simulated in virtual time
@pytest.mark.timeout(1800)
def test_report_and_calibrate_rows_stay_within_the_accuracy_bounds() -> None:
    rows = [r for r in load_published() if r.metric != "agents_per_gpu"]
    everything = run_rows(catalog(), rows)
    table = "\n".join(f"{o.row.id}: {o.row.value} vs {o.simulated} ({o.detail})" for o in everything)
    report = [o for o in everything if o.row.split == "report" and o.row.metric != "ttft_ms"]
    ttft = [o for o in everything if o.row.split == "report" and o.row.metric == "ttft_ms"]
    out_of_source_rows = [o for o in everything if o.row.split == "report"]
    cal = [o for o in everything if o.row.split == "calibrate"]
    first = [o for o in cal if urlparse(o.row.source).hostname in FIRST_TABLE_SOURCES]
    assert 20 <= len(first) < len(cal) and len(report) >= 40 and len(ttft) >= 30, table
    for part, max_median, min_2x in ((report, OOS_MAX_MEDIAN_ERROR, OOS_MIN_WITHIN_2X),
                                     (ttft, TTFT_MAX_MEDIAN_ERROR, TTFT_MIN_WITHIN_2X),
                                     (out_of_source_rows, ISSUE_MAX_MEDIAN_ERROR,
                                      ISSUE_MIN_WITHIN_2X),
                                     (first, MAX_MEDIAN_ERROR, MIN_WITHIN_2X),
                                     (cal, ALL_MAX_MEDIAN_ERROR, ALL_MIN_WITHIN_2X)):
        summary = summarise(part)
        assert summary.simulated == len(part), table
        assert summary.median_error <= max_median, (summary, table)
        assert summary.within_2x >= min_2x, (summary, table)


def test_validate_command_prints_the_comparison_and_writes_a_marked_plot(tmp_path: Path) -> None:
    plot = tmp_path / "v.png"
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.sim", "validate", "--only", "inspur-r1-h200-tp8-conc1",
         "--plot", str(plot)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATED" in proc.stdout and "inspur-r1-h200-tp8-conc1" in proc.stdout
    assert "median |error|" in proc.stdout
    assert plot.stat().st_size > 1000
    proc = subprocess.run([sys.executable, "-m", "infermatrix.sim", "validate", "--only", "nope"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_every_metric_reads_the_same_simulated_run() -> None:
    """A table from another source may state TTFT, E2E latency, total (prompt + output) or
    whole-deployment throughput, medians or means: each is read from the run as its name says,
    so the metrics of one deployment agree with each other."""
    row = dict(split="report", source="https://example.org", hardware="H100",
               model="llama-3.1-70b-instruct", engine="vllm", engine_version="0.10",
               precision="fp8", parallel={"tp": 2}, isl=2000, osl=500, concurrency=4,
               requests=8, value=1.0)
    metrics = ["output_tps_per_gpu", "total_tps_per_gpu", "output_tps", "tpot_ms", "ttft_ms",
               "e2e_latency_ms", "output_tps_per_user"]
    rows = [PublishedRow.model_validate({**row, "id": m, "metric": m}) for m in metrics]
    # 9 prompts sent at once (offline: vLLM's 16,384-token budget): 8 fit the first step's
    # token budget, 1 waits for the next, so the mean TTFT is not the median
    burst = {**row, "concurrency": None, "requests": 9, "metric": "ttft_ms"}
    rows += [PublishedRow.model_validate({**burst, "id": "median-ttft"}),
             PublishedRow.model_validate({**burst, "id": "mean-ttft", "statistic": "mean"})]
    got = {o.row.id: o.simulated for o in run_rows(catalog(), rows)}
    assert all(v and v > 0 for v in got.values()), got
    assert got["total_tps_per_gpu"] == pytest.approx(got["output_tps_per_gpu"] * 2500 / 500)
    assert got["output_tps"] == pytest.approx(got["output_tps_per_gpu"] * 2)
    assert got["output_tps_per_user"] == pytest.approx(1000.0 / got["tpot_ms"])
    # a request's end-to-end latency is its first token plus the rest at TPOT (equal lengths:
    # the medians are of near-identical requests)
    assert got["e2e_latency_ms"] == pytest.approx(got["ttft_ms"] + 499 * got["tpot_ms"], rel=0.05)
    # 'mean' is the mean over the requests of the same run (simulated again here)
    run = simulate(sim_config(catalog(), rows[-1]), [SimRequest(2000, 500)] * 9,
                   record_token_times=False)
    ttfts = [1000.0 * r.ttft for r in run.results]
    assert got["mean-ttft"] == pytest.approx(statistics.fmean(ttfts))
    assert got["median-ttft"] == pytest.approx(statistics.median(ttfts)) != got["mean-ttft"]


# a published row the tests below vary: what was measured, as a page would give it
ROW = dict(split="report", source="https://example.org", hardware="H200", model="deepseek-r1-0528",
           engine="sglang", engine_version="0.5", precision="fp8", isl=1000, osl=200,
           concurrency=4, value=1.0)


def test_a_row_may_name_its_metric_as_the_benchmark_client_does() -> None:
    """bench_serving's result keys and InferenceX's fields ("mean_tpot_ms",
    "output_tput_per_gpu", "interactivity") read as the table's metric and statistic, and
    simulate the same as the table's own names; a metric the table has no equal for is still
    refused."""
    row = dict(ROW, hardware="NVIDIA H100 SXM5 80GB", model="meta-llama/Llama-3.1-70B-Instruct",
               engine="vLLM", engine_version="0.10", precision="FP8", parallel={"tp": 2},
               requests=8)
    pairs = [("mean_tpot_ms", {"metric": "tpot_ms", "statistic": "mean"}),
             ("output_tput_per_gpu", {"metric": "output_tps_per_gpu"}),
             ("interactivity", {"metric": "output_tps_per_user"}),
             # InferenceX's agg files: total per GPU, interactivity, latencies in seconds
             ("tput_per_gpu", {"metric": "total_tps_per_gpu"}),
             ("mean_intvty", {"metric": "output_tps_per_user", "statistic": "mean"}),
             ("median_ttft", {"metric": "ttft_ms", "value": 1000.0})]
    rows = []
    for i, (alias, canonical) in enumerate(pairs):
        rows.append(PublishedRow.model_validate({**row, "id": f"a{i}", "metric": alias}))
        rows.append(PublishedRow.model_validate({**row, "id": f"c{i}", **canonical}))
    assert rows[0].statistic == "mean" and rows[0].metric == "tpot_ms"
    assert [(r.metric, r.statistic, r.value) for r in rows[8:12:2]] == \
        [(r.metric, r.statistic, r.value) for r in rows[9:12:2]]
    got = [o.simulated for o in run_rows(catalog(), rows)]
    assert all(v and v > 0 for v in got)
    assert got[0::2] == pytest.approx(got[1::2])
    with pytest.raises(ValidationError):
        PublishedRow.model_validate({**row, "id": "x", "metric": "p99_goodput"})


@pytest.mark.parametrize("text,fields", [
    ("TP8", {"tp": 8}),
    ("TP=4 DP=2 EP=4", {"tp": 4, "dp": 2, "ep": 4}),  # AA-AgentPerf's spelling
    ("TP8 + EP8", {"tp": 8, "ep": 8}),
    ("DEP16", {"tp": 16, "ep": 16, "dp": 16, "attention_dp": True}),  # TensorRT-LLM's
    ("TEP8", {"tp": 8, "ep": 8}),
    ("TP4 + EP4, attention-DP", {"tp": 4, "ep": 4, "dp": 4, "attention_dp": True}),
    ("DP8 attention, TP8", {"tp": 8, "dp": 8, "attention_dp": True}),
])
def test_a_row_may_write_its_parallelism_as_a_page_does(text: str, fields: dict) -> None:
    """A parallelism string reads as the same deployment as the catalog's fields; anything it
    does not understand is refused (not read as one GPU)."""
    row = dict(ROW, id="p", metric="tpot_ms")
    assert PublishedRow.model_validate({**row, "parallel": text}).parallel == \
        PublishedRow.model_validate({**row, "parallel": fields}).parallel
    for bad in ("TP8 bogus", "EP", "attention-DP", ""):
        with pytest.raises(ValidationError, match="not understood"):
            PublishedRow.model_validate({**row, "parallel": bad})


def test_a_row_from_elsewhere_needs_no_split_or_engine_version(tmp_path: Path) -> None:
    """A table from another source names what was measured; what the table's own discipline
    adds (the split) and what the simulation does not read (the engine build) may be left out:
    such a row is a report row (nothing was fitted on it). What was measured stays required."""
    row = ("- id: x\n  source: https://example.org\n  hardware: NVIDIA H200\n"
           "  model: DeepSeek-R1-0528\n  engine: SGLang\n  precision: FP8\n  parallel: TP8\n"
           "  isl: 1024\n  osl: 1024\n  concurrency: 4\n  metric: median_tpot_ms\n"
           "  value: 9.73\n")
    table = tmp_path / "theirs.yaml"
    table.write_text(row)
    (got,) = load_published(table)
    assert (got.split, got.engine_version, got.metric) == ("report", "unstated", "tpot_ms")
    table.write_text(row.replace("  osl: 1024\n", ""))
    with pytest.raises(CatalogError, match="needs isl and osl"):
        load_published(table)


# a dense model on 4x H200, sent without a concurrency cap (the tests below set the load)
LLAMA_TP4 = {k: v for k, v in ROW.items() if k != "concurrency"} | dict(
    model="llama-3.1-70b-instruct", engine="vllm", parallel={"tp": 4}, isl=1000, osl=200)


def test_a_row_measured_at_a_request_rate_sends_at_that_rate() -> None:
    """A result measured with bench_serving's --request-rate (vLLM's serving dashboards run
    QPS 1, 4, 16): its requests arrive at that rate, so below saturation the output
    throughput is the rate × output length and the decode is lightly batched; at a rate the
    deployment cannot keep up with, TPOT grows. --burstiness keeps the mean rate."""
    base = dict(LLAMA_TP4, requests=200, id="rate")
    cat = catalog()

    def simulated(**kw: object) -> float:
        row = PublishedRow.model_validate(dict(base, **kw))
        (outcome,) = run_rows(cat, [row])
        assert outcome.simulated is not None, outcome.detail
        return outcome.simulated

    light = simulated(request_rate=1, metric="output_tps")
    assert 0.8 * 200 < light <= 200 * 1.01
    assert 0.8 * 800 < simulated(request_rate=4, burstiness=0.5, metric="output_tps") <= 808
    slow = simulated(request_rate=1, metric="tpot_ms")
    assert simulated(request_rate=16, metric="tpot_ms") > 2 * slow
    # every request at once (no rate, no concurrency) is the offline batch: slower still a token
    assert simulated(metric="tpot_ms") > 2 * slow
    with pytest.raises(ValidationError):
        PublishedRow.model_validate(dict(base, request_rate=0, metric="tpot_ms"))


def test_percentile_rows_read_as_bench_serving_writes_them() -> None:
    """"p99_ttft_ms" and the other percentile keys of bench_serving's results are the table's
    latency metric at that percentile of the requests: above the median wherever requests
    differ (a rate the deployment falls behind at), ordered p90 <= p95 <= p99."""
    base = dict(LLAMA_TP4, requests=200, request_rate=16)
    rows = [PublishedRow.model_validate(dict(base, id=k, metric=k))
            for k in ("median_ttft_ms", "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms",
                      "p99_tpot_ms", "median_tpot_ms")]
    assert [(r.metric, r.statistic) for r in rows[:4]] == [
        ("ttft_ms", "median"), ("ttft_ms", "p90"), ("ttft_ms", "p95"), ("ttft_ms", "p99")]
    median, p90, p95, p99, tpot99, tpot50 = (o.simulated for o in run_rows(catalog(), rows))
    assert median < p90 <= p95 <= p99
    assert tpot99 >= tpot50


def test_itl_rows_are_the_gaps_between_streamed_events() -> None:
    """bench_serving's ITL (per event, pooled over the requests): without speculative decoding
    each event is one token a step, so the median ITL is the median TPOT; with MTP drafts an
    event carries the accepted tokens of a step, so ITL is longer than TPOT."""
    plain = dict(LLAMA_TP4, requests=16, concurrency=4)
    rows = [PublishedRow.model_validate(dict(plain, id=m, metric=m))
            for m in ("median_itl_ms", "median_tpot_ms", "p99_itl_ms")]
    assert rows[0].metric == "itl_ms" and rows[2].statistic == "p99"
    itl, tpot, itl99 = (o.simulated for o in run_rows(catalog(), rows))
    assert itl == pytest.approx(tpot, rel=0.05) and itl99 >= itl
    mtp = dict(ROW, id="mtp", model="deepseek-r1-0528", parallel={"tp": 8}, isl=1000, osl=200,
               concurrency=1, requests=2, knobs={"spec_draft_tokens": 3, "spec_method": "mtp"})
    rows = [PublishedRow.model_validate(dict(mtp, id=m, metric=m))
            for m in ("median_itl_ms", "mean_tpot_ms")]
    itl, tpot = (o.simulated for o in run_rows(catalog(), rows))
    assert itl > 1.5 * tpot


def test_a_row_with_a_range_ratio_draws_its_lengths_as_the_client_does() -> None:
    """bench_serving's --random-range-ratio r: lengths uniform in [r L, L] (SGLang's client and
    InferenceX's), the row's isl/osl being their means. Closed-loop requests of one length all
    finish together and arrive together; drawn ones stagger, so newcomers prefill while the
    others decode, as measured runs do: at concurrency 100 it costs throughput (5% here)."""
    base = dict(LLAMA_TP4, id="spread", isl=922, osl=922, concurrency=100, requests=1000,
                metric="output_tps")
    fixed = PublishedRow.model_validate(base)
    assert set(row_lengths(fixed, 50)) == {(922, 922)}
    ifx = PublishedRow.model_validate(dict(base, range_ratio=0.8))
    drawn = row_lengths(ifx, 4000)
    assert drawn == row_lengths(ifx, 4000)  # seeded: a row simulates the same requests each time
    for lengths in zip(*drawn, strict=True):
        assert min(lengths) >= 819 and max(lengths) <= 1024 and len(set(lengths)) > 150
        assert abs(statistics.fmean(lengths) / 922 - 1) < 0.01
    cookbook = PublishedRow.model_validate(dict(base, isl=500, osl=500, range_ratio=0))
    prompts = [p for p, _ in row_lengths(cookbook, 4000)]
    assert min(prompts) >= 1 and max(prompts) <= 1000 and min(prompts) < 50
    assert abs(statistics.fmean(prompts) / 500 - 1) < 0.03
    with pytest.raises(ValidationError):
        PublishedRow.model_validate(dict(base, range_ratio=1.5))
    # the same mean lengths, staggered: slower than the synchronised waves
    even, spread = run_rows(catalog(), [PublishedRow.model_validate(dict(base, isl=500, osl=500)),
                                        cookbook])
    assert spread.simulated < 0.98 * even.simulated


def test_a_sharegpt_row_draws_varied_lengths_and_waits_for_its_longest_reply(tmp_path: Path
                                                                             ) -> None:
    """ShareGPT lengths vary request by request: drawn (seeded) about the row's means and
    filtered as the row's client filters pairs (vLLM's bench: 4 <= prompt <= 1,024, reply >= 4,
    both <= 2,048). A batch sent at once ends only with its longest reply, so the same mean
    lengths run well below the throughput of uniform ones."""
    base = dict(LLAMA_TP4, id="chat", isl=215, osl=197, requests=400, metric="output_tps")
    vllm = PublishedRow.model_validate(dict(base, lengths="sharegpt"))
    drawn = row_lengths(vllm, 1000)
    assert drawn == row_lengths(vllm, 1000)
    prompts, replies = zip(*drawn, strict=True)
    assert min(prompts) >= 4 and max(prompts) <= 1024 and min(replies) >= 4
    assert max(p + r for p, r in drawn) <= 2048 and max(replies) > 4 * 197
    assert abs(statistics.fmean(prompts) / 215 - 1) < 0.01
    assert abs(statistics.fmean(replies) / 197 - 1) < 0.01
    sglang = PublishedRow.model_validate(dict(base, isl=900, lengths="sharegpt-sglang"))
    assert max(p for p, _ in row_lengths(sglang, 1000)) > 1024  # SGLang's client keeps long ones
    uniform, varied = run_rows(catalog(), [PublishedRow.model_validate(base), vllm])
    assert varied.simulated < 0.8 * uniform.simulated
    # means the client's filter cannot give: the row reports why, the table run goes on
    (impossible,) = run_rows(catalog(), [PublishedRow.model_validate(dict(base, isl=5000,
                                                                          lengths="sharegpt"))])
    assert impossible.simulated is None and "client keeps" in impossible.detail
    both = tmp_path / "published.yaml"
    both.write_text(yaml.safe_dump([dict(base, lengths="sharegpt", range_ratio=0.8)]))
    with pytest.raises(CatalogError) as exc:
        load_published(both)
    assert [p.field for p in exc.value.problems] == ["[0].lengths"], exc.value.problems


# ---------------------------------------------------------------- validation that cannot leak
def test_the_table_is_split_by_source_so_every_report_row_is_out_of_source() -> None:
    """No calibrate row comes from a report row's page or measured its setup (the MLPerf
    Llama 2 70B MI300X rows of AMD and Dell are one setup: both calibrate)."""
    rows = load_published()
    report = [r for r in rows if r.split == "report"]
    cal = [r for r in rows if r.split == "calibrate"]
    assert len(report) >= 40
    assert not {source_key(r) for r in report} & {source_key(r) for r in cal}
    assert not {setup_key(r) for r in report} & {setup_key(r) for r in cal}
    assert out_of_source(rows) == report
    # a --split report run still judges against the whole table's calibrate rows
    assert out_of_source(report, rows) == report


def test_out_of_source_leaves_out_report_rows_that_share_a_page_or_a_setup() -> None:
    """A table from elsewhere (--table) may leak: its headline keeps only the report rows no
    calibrate row shares a page or a setup with."""
    rows = load_published()
    cal = next(r for r in rows if r.split == "calibrate" and r.metric != "agents_per_gpu")
    same_page = cal.model_copy(update={"id": "p", "split": "report", "isl": (cal.isl or 1) + 1})
    same_setup = cal.model_copy(update={"id": "s", "split": "report",
                                        "source": "https://elsewhere.example.org/x"})
    fresh = same_setup.model_copy(update={"id": "f", "isl": (cal.isl or 1) + 1})
    assert out_of_source([cal, same_page, same_setup, fresh]) == [fresh]


def test_a_bound_row_is_met_on_its_side_and_missed_by_its_distance() -> None:
    row = PublishedRow.model_validate(dict(ROW, id="b", parallel="TP8", metric="tpot_ms",
                                           value=100.0, bound="at_most"))
    assert Outcome(row, 40.0).error == 0.0 and Outcome(row, 40.0).ratio == 1.0
    assert Outcome(row, 150.0).error == pytest.approx(0.5)
    floor = row.model_copy(update={"bound": "at_least", "metric": "output_tps"})
    assert Outcome(floor, 120.0).error == 0.0
    assert Outcome(floor, 50.0).ratio == pytest.approx(2.0)


def test_the_ascend_16x16_row_is_the_two_bounds_its_source_supports() -> None:
    """The seed's 107 ms at 16 x 16 is not a consistent point; SGLang's test of the same
    configuration asserts mean TPOT <= 107 x 1.02 and output >= 140.48 x 0.98."""
    rows = {r.id: r for r in load_published() if r.id.startswith("ascend-dsv32-1p1d-128k")}
    assert "ascend-dsv32-1p1d-128k-conc16" not in rows
    tpot, out = rows["ascend-dsv32-1p1d-128k-16x16-tpot-bound"], rows[
        "ascend-dsv32-1p1d-128k-16x16-output-bound"]
    assert (tpot.bound, tpot.value, tpot.statistic) == ("at_most", 109.14, "mean")
    assert (out.bound, out.value, out.metric) == ("at_least", 137.67, "output_tps")
    outcomes = run_rows(catalog(), list(rows.values()))
    by = {o.row.id: o for o in outcomes}
    assert by[tpot.id].error == 0.0 and by[out.id].error == 0.0, outcomes
    assert abs(by["ascend-dsv32-1p1d-128k-conc8"].error) <= 0.30  # the c8 point, within 30%


def test_the_fitted_table_numbers_are_counted_in_the_docs() -> None:
    """docs/sim.md states how many table numbers are fitted on published rows, and lists
    each fitted row; the count follows the tables."""
    numbers = table_numbers(default_tables())
    fitted = [n for n in numbers if n[3]]
    doc = (Path(__file__).resolve().parents[2] / "docs" / "sim.md").read_text()
    assert f"**{len(fitted)} of the {len(numbers)} numbers**" in doc
    for name in {n[0] for n in fitted}:
        assert f"| {name} |" in doc, name


def test_check_holds_the_out_of_source_rows_to_the_issues_bounds(tmp_path: Path) -> None:
    """--check: median |error| <= 20% and >= 90% within 2x over the out-of-source rows, and the
    TTFT rows' median <= 30% on their own."""
    from infermatrix.sim.cli import main

    base = [PublishedRow.model_validate(dict(ROW, id=m, parallel="TP8", metric=m))
            for m in ("tpot_ms", "ttft_ms")]
    tpot, ttft = (o.simulated for o in run_rows(catalog(), base))

    def check(tpot_value: float, ttft_value: float) -> int:
        rows = [dict(ROW, id="t", parallel="TP8", metric="tpot_ms", value=tpot_value),
                dict(ROW, id="f", parallel="TP8", metric="ttft_ms", value=ttft_value)]
        table = tmp_path / "t.yaml"
        table.write_text(yaml.safe_dump(rows))
        return main(["validate", "--table", str(table), "--check", "--no-plot"])

    assert check(tpot, ttft) == 0
    assert check(tpot, ttft * 1.5) == 1  # TTFT 33% short: the overall median is 17%, in bounds
    assert check(tpot * 3, ttft) == 1  # one row of two beyond 2x
