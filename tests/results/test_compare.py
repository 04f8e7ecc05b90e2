"""compare: per configuration, the change of the headline metrics between two runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from imx_results_data import RECIPE, make_raw

from infermatrix.results import collect
from infermatrix.results.compare import HEADLINE, classify, compare, failures, markdown
from infermatrix.results.export import write_records_jsonl
from infermatrix.results.records import Record, normalise

BASE_RUN, NEW_RUN = "20261120T000000Z-base00", "20261121T000000Z-new000"


def raw(run: str, conc: int, status: str = "ok", **metrics: Any) -> dict[str, Any]:
    day = run[6:8]
    block = {"run_id": run, "concurrency": conc, "status": status,
             "started_at": f"2026-11-{day}T00:00:00Z",
             "error": None if status == "ok" else "error rate 40.0% exceeds 5%"}
    return make_raw(block, **metrics)


def rec(run: str, conc: int, status: str = "ok", **metrics: Any) -> Record:
    return normalise(raw(run, conc, status, **metrics))


def sides() -> tuple[list[Record], list[Record]]:
    """Base and new, one configuration per concurrency, one of each kind of change."""
    base = [rec(BASE_RUN, 1), rec(BASE_RUN, 2), rec(BASE_RUN, 4), rec(BASE_RUN, 8),
            rec(BASE_RUN, 16, "failed"), rec(BASE_RUN, 32, "failed"), rec(BASE_RUN, 64),
            rec(BASE_RUN, 256)]
    new = [rec(NEW_RUN, 1, output_throughput=450.0 * 1.02),  # +2 %: noise
           rec(NEW_RUN, 2, output_throughput=450.0 * 0.8),  # -20 % output tok/s/GPU
           rec(NEW_RUN, 4, output_throughput=450.0 * 1.1),  # +10 %
           rec(NEW_RUN, 8, "failed"), rec(NEW_RUN, 16), rec(NEW_RUN, 32, "failed"),
           rec(NEW_RUN, 128),
           rec(NEW_RUN, 256, median_ttft_ms=500.0 * 1.15)]  # TTFT: lower is better
    return base, new


def test_headline_metrics() -> None:
    assert HEADLINE == (("output_tput_per_gpu", True), ("interactivity", True),
                        ("median_ttft_ms", False), ("median_e2el_ms", False))


def test_every_kind_of_change() -> None:
    base, new = sides()
    rows = compare(base, new)
    changes = {r.key[3]: r.change for r in rows}
    assert changes == {1: "same", 2: "regression", 4: "improved", 8: "now failing", 16: "fixed",
                       32: "failing", 64: "gone", 128: "new", 256: "regression"}
    # the most urgent first
    assert [r.change for r in rows] == ["now failing", "regression", "regression", "improved",
                                        "fixed", "new", "gone", "failing", "same"]
    two = next(r for r in rows if r.key == (RECIPE, "fixed-1k-1k", "h200-dgx", 2))
    assert two.deltas["output_tput_per_gpu"] == pytest.approx(-0.2)
    assert two.deltas["interactivity"] == pytest.approx(0.0)


def test_noise_threshold() -> None:
    base, new = rec(BASE_RUN, 1), rec(NEW_RUN, 1, output_throughput=450.0 * 1.02)
    assert classify(base, new, noise=0.03)[0] == "same"
    assert classify(base, new, noise=0.01)[0] == "improved"
    worse = rec(NEW_RUN, 1, output_throughput=450.0 * 0.97)
    assert classify(base, worse, noise=0.03)[0] == "same"  # exactly at the noise: same
    assert classify(base, worse, noise=0.02)[0] == "regression"
    # a metric that got worse beyond the noise outweighs one that got better
    mixed = rec(NEW_RUN, 1, output_throughput=900.0, median_e2el_ms=20_000.0)
    assert classify(base, mixed)[0] == "regression"


def test_failures_gate() -> None:
    rows = compare(*sides())
    assert {r.key[3] for r in failures(rows, 0.10)} == {2, 8, 256}
    assert {r.key[3] for r in failures(rows, 0.25)} == {8}  # a level that now fails always counts


def test_each_side_uses_its_latest_measurement() -> None:
    older = rec("20261119T000000Z-older0", 1, output_throughput=100.0)
    rows = compare([older, rec(BASE_RUN, 1)], [rec(NEW_RUN, 1)])
    assert [r.change for r in rows] == ["same"] and rows[0].base.run_id == BASE_RUN


def test_markdown() -> None:
    base, new = sides()
    text = markdown(compare(base, new), base, new, 0.03)
    lines = text.splitlines()
    assert lines[0] == "## infermatrix compare"
    assert f"Base: `{BASE_RUN}` (8 levels) · new: `{NEW_RUN}` (8 levels) · noise ±3%" in text
    assert ("**1 now failing** · **2 regression** · 1 improved · 1 fixed · 1 new · 1 gone · "
            "1 failing · 1 same") in text
    assert ("| change | recipe | workload | runner | conc | output tok/s/GPU | tok/s/user | "
            "median TTFT (ms) | median E2E (ms) |") in lines
    assert (f"| **regression** | {RECIPE} | fixed-1k-1k | h200-dgx | 2 | 56.2 → 45.0 (-20.0% ▼) | "
            "50.0 → 50.0 (+0.0%) | 500.0 → 500.0 (+0.0%) | 12,500 → 12,500 (+0.0%) |") in lines
    row = "| {} | " + RECIPE + " | fixed-1k-1k | h200-dgx | {} | {} |"
    assert row.format("new", 128, "56.2 | 50.0 | 500.0 | 12,500") in lines
    assert row.format("**now failing**", 8, "56.2 → 56.2 | 50.0 → 50.0 | 500.0 → 500.0 | "
                      "12,500 → 12,500") in lines
    assert "No configuration" in markdown([], [], [])


# ---------------------------------------------------------------- the CLI


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infermatrix.cli", "compare", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def write_run(root: Path, run: str, levels: list[dict[str, Any]]) -> Path:
    folder = root / run / "jobs" / "job-a"
    folder.mkdir(parents=True)
    for doc in levels:
        (folder / f"conc-{doc['infermatrix']['concurrency']}.json").write_text(json.dumps(doc))
    return root / run


def test_cli_jsonl_fail_on_regression(tmp_path: Path) -> None:
    base, new = sides()
    a = write_records_jsonl(base, tmp_path / "base.jsonl")
    b = write_records_jsonl(new, tmp_path / "new.jsonl")
    res = cli(str(a), str(b))
    assert res.returncode == 0 and res.stdout.startswith("## infermatrix compare")
    assert res.stdout.count("\n| ") == 1 + 9  # header + one row per configuration
    gated = cli(str(a), str(b), "--fail-on-regression", "10")
    assert gated.returncode == 1 and gated.stdout == res.stdout
    assert "3 configurations now failing or worse beyond the noise by more than 10%" \
        in gated.stderr


def test_cli_store_sides_and_threshold(tmp_path: Path) -> None:
    """A store as BASE is its latest run not in NEW; as NEW, its latest run."""
    older_run = "20261119T000000Z-older0"
    older = write_run(tmp_path, older_run, [raw(older_run, 1, output_throughput=100.0)])
    base = write_run(tmp_path, BASE_RUN, [raw(BASE_RUN, 1), raw(BASE_RUN, 2)])
    new = write_run(tmp_path, NEW_RUN, [raw(NEW_RUN, 1, output_throughput=450 * 0.95),
                                        raw(NEW_RUN, 2)])
    store = tmp_path / "history.sqlite"
    for run in (older, base, new):  # the new run is already in the store, as in CI
        collect([run], store=store)
    res = cli(str(store), str(new), "--fail-on-regression", "10")
    assert res.returncode == 0, res.stderr
    assert f"Base: `{BASE_RUN}` (2 levels)" in res.stdout and "| **regression** |" in res.stdout
    assert "-5.0%" in res.stdout
    assert cli(str(store), str(new), "--fail-on-regression", "4").returncode == 1
    assert cli(str(store), str(new), "--noise", "6").stdout.count("regression |") == 0
    # the store as NEW (its latest run), an explicit base run
    res = cli(str(store), str(store), "--base-run", older_run)
    assert f"Base: `{older_run}` (1 levels) · new: `{NEW_RUN}`" in res.stdout
    assert "| improved |" in res.stdout and "| new |" in res.stdout


def test_cli_nothing_to_compare_against(tmp_path: Path) -> None:
    new = write_run(tmp_path, NEW_RUN, [raw(NEW_RUN, 1)])
    store = tmp_path / "history.sqlite"
    collect([new], store=store)
    res = cli(str(store), str(new), "--fail-on-regression", "10")  # the first night: only NEW
    assert res.returncode == 0 and "Base: nothing (0 levels)" in res.stdout
    assert "| new |" in res.stdout


@pytest.mark.parametrize("args", [["nope", "nope2"], ["--noise", "-1", "{run}", "{run}"],
                                  ["--noise", "nan", "{run}", "{run}"],
                                  ["{run}", "{run}", "--fail-on-regression", "nan"],
                                  ["{run}", "{run}", "--fail-on-regression", "inf"],
                                  ["{run}", "{run}", "--fail-on-regression", "-5"],
                                  ["{run}", "{run}", "--z", "-1"], ["{run}", "{run}", "--z", "x"],
                                  ["{run}", "{run}", "--lookback", "0"],
                                  ["{run}"], ["{run}", "{run}", "--base-run", "unknown"],
                                  ["{notes}", "{run}"]])
def test_cli_mistakes(tmp_path: Path, args: list[str]) -> None:
    run = write_run(tmp_path, NEW_RUN, [raw(NEW_RUN, 1)])
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    res = cli(*(a.format(run=run, notes=notes) for a in args))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("infermatrix compare: ")
