"""build_run_report and `infermatrix report`: every artefact exists, is valid and agrees."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from imx_results_data import RUN, messy_run

from infermatrix.report import build_run_report
from infermatrix.results.export import read_records_jsonl

PNG = b"\x89PNG\r\n\x1a\n"


def _embedded(index: Path) -> dict:
    text = index.read_text()
    blob = re.search(r'<script id="imx-data" type="application/json">(.*?)</script>', text, re.S)
    assert blob, "no embedded data"
    return json.loads(blob.group(1).replace("<\\/", "</"))


def _column(data: dict, name: str) -> list:
    """A column's values over every run's chunk (a small history's are all inline)."""
    out: list = []
    for _, chunk in sorted(data["chunks"]["inline"]["runs"].items()):
        col = chunk["columns"][name]
        out += [col["dict"][c] if c >= 0 else None for c in col["codes"]] if "dict" in col else col["values"]
    return out


def test_build_run_report_writes_everything(tmp_path: Path) -> None:
    messy_run(tmp_path)
    run = tmp_path / RUN
    out = build_run_report(run)
    assert {"records", "records_csv", "pareto", "dashboard", "summary", "frontiers"} <= set(out)
    assert all(p.parent == run or p.parent.parent == run for p in out.values())
    assert out["pareto"].read_bytes().startswith(PNG)
    plots = {p.name for p in (run / "plots").iterdir()}
    for view in ("throughput-vs-interactivity", "throughput-vs-e2e-latency", "cost-vs-interactivity"):
        for theme in ("light", "dark"):
            assert f"{view}.{theme}.png" in plots and f"{view}.{theme}.svg" in plots
    assert not any(p.startswith("energy") for p in plots)  # no energy measured: no energy plot
    assert (run / "plots" / "throughput-vs-interactivity.dark.svg").read_text().lstrip().startswith("<?xml")
    records = read_records_jsonl(out["records"])
    assert len(records) == 6
    data = _embedded(out["dashboard"])
    assert data["count"] == 6 and data["runs"] == [RUN]
    raw_links = [v for v in _column(data, "raw") if v]
    assert len(raw_links) == 6 and all((run / link).is_file() for link in raw_links)
    assert "https://" not in out["dashboard"].read_text() and "http://" not in out["dashboard"].read_text()
    summary = out["summary"].read_text()
    assert "## infermatrix results" in summary and "6 levels (5 ok, 1 failed)" in summary
    assert "### Failed levels (1)" in summary
    frontiers = json.loads(out["frontiers"].read_text())
    assert frontiers["views"]["throughput-vs-interactivity"]["panels"][0]["model"] == "deepseek-r1-0528"
    # building again over its own output is harmless: report files are not mistaken for results
    again = build_run_report(run, plots=False)
    assert len(read_records_jsonl(again["records"])) == 6


def test_report_cli_from_a_store_copies_raw_json(tmp_path: Path) -> None:
    messy_run(tmp_path / "in")
    store = tmp_path / "history.sqlite"
    subprocess.run([sys.executable, "-m", "infermatrix.cli", "collect", str(tmp_path / "in" / RUN),
                    "--store", str(store), "-q"], check=True, capture_output=True, timeout=60)
    site = tmp_path / "site"
    summary = tmp_path / "step-summary.md"
    res = subprocess.run([sys.executable, "-m", "infermatrix.cli", "report", str(store), "-o", str(site),
                          "--no-plots", "--summary", str(summary), "--catalog", "catalog.html"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    data = _embedded(site / "index.html")
    links = [v for v in _column(data, "raw") if v]
    assert len(links) == 6 and all(link.startswith(f"raw/{RUN}/") for link in links)
    # a job's levels in one file, each level's raw result under its concurrency
    for link in set(links):
        copied = json.loads((site / link).read_text())
        assert all(doc["infermatrix"]["run_id"] == RUN and doc["infermatrix"]["concurrency"] == int(c)
                   for c, doc in copied.items())
    assert sum(len(json.loads((site / link).read_text())) for link in set(links)) == 6
    assert summary.read_text().startswith("## infermatrix results")
    bad = subprocess.run([sys.executable, "-m", "infermatrix.cli", "report", str(tmp_path / "none"), "-o",
                          str(site)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no such file or directory" in bad.stderr


def test_hostile_strings_cannot_break_out_of_the_data_block(tmp_path: Path) -> None:
    from imx_results_data import make_raw

    from infermatrix.report.dashboard import write_dashboard
    from infermatrix.results.records import normalise

    evil = "x</script><script>alert(1)</script><!--"
    rec = normalise(make_raw({"workload": evil, "error": evil}))
    page = write_dashboard([rec], tmp_path / "index.html").read_text()
    assert page.count("</script>") == 2  # the data block's and the code's own
    chunk = _embedded(tmp_path / "index.html")["chunks"]["inline"]["runs"]["0"]
    assert chunk["columns"]["workload"]["dict"] == [evil]


def test_catalog_json_gives_launch_commands(tmp_path: Path) -> None:
    from infermatrix.report.dashboard import launch_commands

    messy_run(tmp_path / "in")
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"schema_version": 1, "count": 1, "models": [{"model": "m", "configurations": [
        {"id": "deepseek-r1-0528/h200-sglang-fp8", "processes": [
            {"name": "both-0", "role": "both", "command": "python3 -m sglang.launch_server --tp 8"}]},
        {"id": "other/recipe", "processes": []}]}]}))
    assert launch_commands(catalog)["deepseek-r1-0528/h200-sglang-fp8"][0]["command"].endswith("--tp 8")
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "infermatrix.cli", "report", str(tmp_path / "in" / RUN), "-o",
                          str(site), "--no-plots", "--catalog-json", str(catalog)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    launch = _embedded(site / "index.html")["launch"]
    assert list(launch) == ["deepseek-r1-0528/h200-sglang-fp8"]  # only recipes that have records
    catalog.write_text('{"models": 3}')
    bad = subprocess.run([sys.executable, "-m", "infermatrix.cli", "report", str(tmp_path / "in" / RUN), "-o",
                          str(site), "--no-plots", "--catalog-json", str(catalog)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not the JSON of `infermatrix catalog --json`" in bad.stderr
