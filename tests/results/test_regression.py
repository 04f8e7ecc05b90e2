"""The regression rule: a change counts only beyond the levels' own bootstrap uncertainty and
the configuration's night-to-night spread over the history (results/regression.py)."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from imx_results_data import make_raw

from infermatrix.results.compare import compare, failures, markdown
from infermatrix.results.records import Record, normalise
from infermatrix.results.regression import Rule, confidence_text, night_history
from infermatrix.results.uncertainty import intervals


def samples(n: int, ttft_ms: float = 500.0, spread: float = 0.3, seed: int = 1) -> dict[str, Any]:
    """Per-request samples as the client writes them: n requests around ``ttft_ms``."""
    rng = random.Random(seed)
    ttft = [ttft_ms * math.exp(rng.gauss(0, spread)) for _ in range(n)]
    tpot = [20.0 * math.exp(rng.gauss(0, spread / 3)) for _ in range(n)]
    out = [500] * n
    return {"ttft_ms": ttft, "tpot_ms": tpot, "e2el_ms": [t + 499 * p for t, p in zip(ttft, tpot, strict=True)],
            "output_tokens": out}


def level(run: str, n: int, scale: float = 1.0, seed: int = 1, **block: Any) -> Record:
    """A level of n requests whose throughput is ``scale`` times 450 tok/s."""
    s = samples(n, seed=seed)
    raw = make_raw({"run_id": run, "started_at": f"2026-11-{run[6:8]}T00:00:00Z", **block},
                   output_throughput=450.0 * scale, median_ttft_ms=sorted(s["ttft_ms"])[n // 2],
                   request_samples=s)
    return normalise(raw)


def test_each_level_carries_bootstrap_intervals() -> None:
    small, large = level("20261120T0", 20), level("20261120T0", 2000)
    assert small.samples == 20 and large.samples == 2000
    for metric in ("output_tput_per_gpu", "interactivity", "median_ttft_ms", "median_e2el_ms"):
        lo, hi = small.ci95[metric]
        assert lo < small.metric(metric) < hi
        lo2, hi2 = large.ci95[metric]
        assert hi2 - lo2 < (hi - lo) / 4  # 100 × the requests: about a tenth of the width
    assert intervals(None, {}) == {} and intervals({"ttft_ms": "x"}, {"median_ttft_ms": 1.0}) == {}
    # seeded: the same file always gives the same record
    assert level("20261120T0", 20).ci95 == small.ci95


def test_a_change_within_a_small_levels_own_noise_is_the_same() -> None:
    base = level("20261120T0", 8)
    # 6 % slower throughput on a level of 8 requests: within its own uncertainty
    new = level("20261121T0", 8, scale=0.94, seed=2)
    (row,) = compare([base], [new], noise=0.03)
    assert row.verdicts["output_tput_per_gpu"].change == pytest.approx(-0.06)
    assert row.change == "same" and failures([row], 0.0) == []
    # the same change over 4,000 requests a level is beyond it (and beyond the 3 % band)
    (row,) = compare([level("20261120T0", 4000)], [level("20261121T0", 4000, 0.94, seed=2)])
    verdict = row.verdicts["output_tput_per_gpu"]
    assert row.change == "regression" and verdict.significant and verdict.worse
    assert verdict.confidence is not None and verdict.confidence > 0.999
    assert failures([row], 0.05) == [row] and failures([row], 0.10) == []


def test_the_night_to_night_spread_of_the_history_widens_the_band() -> None:
    nights = [level(f"202611{10 + i}T0", 4000, scale=s) for i, s in
              enumerate((1.0, 0.96, 1.04, 0.98, 1.03))]  # a configuration that swings ±4 %
    history = night_history(nights, lookback=10, metrics=["output_tput_per_gpu"])
    rule = Rule(noise=0.03, z=5.0, nights=history)
    new = level("20261121T0", 4000, 0.90, seed=2)  # 10 % slower than the last night
    (row,) = compare(nights, [new], rule=rule)
    verdict = row.verdicts["output_tput_per_gpu"]
    assert verdict.night_sigma is not None and verdict.nights == 5
    assert verdict.band > 0.2 and row.change == "same"  # within z × √2 × its spread
    (row,) = compare(nights, [level("20261121T0", 4000, 0.5, seed=2)], rule=rule)
    assert row.change == "regression"
    assert night_history(nights, lookback=2, metrics=["output_tput_per_gpu"])[
        (new.natural_key, "output_tput_per_gpu")] == [nights[-2].output_tput_per_gpu,
                                                      nights[-1].output_tput_per_gpu]
    # steady nights: the band is the levels' own noise, and the same 10 % is a regression
    steady = [level(f"202611{10 + i}T0", 4000) for i in range(3)]
    rule = Rule(nights=night_history(steady, metrics=["output_tput_per_gpu"]))
    (row,) = compare(steady, [new], rule=rule)
    assert row.verdicts["output_tput_per_gpu"].night_sigma == 0.0 and row.change == "regression"


def test_the_output_says_by_how_much_and_how_sure() -> None:
    base, new = level("20261120T0", 4000), level("20261121T0", 4000, 0.8, seed=2)
    rows = compare([base], [new])
    text = markdown(rows, [base], [new], 0.03)
    line = next(ln for ln in text.splitlines() if ln.startswith("- **worse**"))
    assert "output tok/s/GPU -20.0% (levels ±" in line and "confidence" in line
    assert "band ±3.0%: under 3 runs of history" in line
    assert confidence_text(0.95) == "95%" and confidence_text(0.9999) == "99.99%"
    assert confidence_text(1.0) == ">99.999%"


def test_the_cli_weighs_a_change_against_the_stores_history(tmp_path: Path) -> None:
    from infermatrix.results import collect

    def write(run: str, scale: float, seed: int) -> Path:
        s = samples(4000, seed=seed)
        raw = make_raw({"run_id": run, "started_at": f"2026-11-{run[6:8]}T00:00:00Z"},
                       output_throughput=450.0 * scale, request_samples=s,
                       median_ttft_ms=sorted(s["ttft_ms"])[2000])
        path = tmp_path / run / "jobs" / "job-a" / "conc-4.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(raw))
        return tmp_path / run

    store = tmp_path / "history.sqlite"
    for i, scale in enumerate((1.0, 0.95, 1.05, 0.97, 1.03)):  # a configuration swinging ±5 %
        collect([write(f"202611{10 + i}T000000Z-n", scale, seed=1)], store=store)
    new = write("20261121T000000Z-new", 0.92, seed=1)  # 8 % below the first night

    def gate(*more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "infermatrix.cli", "compare", str(store),
                               str(new), "--fail-on-regression", "0", *more],
                              capture_output=True, text=True, timeout=120, check=False)

    within = gate()  # the last 10 runs: 5 nights of ±4 % spread: within the noise
    assert within.returncode == 0 and "1 same" in within.stdout, within.stdout + within.stderr
    short = gate("--lookback", "2")  # 2 runs: the spread is not known, ±3 % stands in
    assert short.returncode == 1 and "**1 regression**" in short.stdout
    assert "band ±3.0%: under 3 runs of history" in short.stdout
