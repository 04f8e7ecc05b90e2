"""`infermatrix sim validate --inferencex FILE`: InferenceX's own results export (its dashboard's
JSON array of records) run as report rows, with the points the simulator cannot stand for
counted and left out, and a malformed export refused in one line per problem."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infermatrix.catalog.yamlsrc import CatalogError
from infermatrix.sim.inferencex import inferencex_rows


def _record(**over) -> dict:
    """One single-node point in the dashboard's shape (made up for the test, not copied)."""
    rec = {"hardware": "h200", "framework": "sglang", "model": "dsr1", "precision": "fp8",
           "spec_method": "none", "disagg": False, "is_multinode": False, "decode_tp": 8,
           "decode_ep": 1, "decode_dp_attention": False, "isl": 1024, "osl": 1024, "conc": 4,
           "image": "lmsysorg/sglang:v0.5.9-cu129-amd64", "date": "2026-03-01",
           "run_url": "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1/attempts/1",
           "metrics": {"median_tpot": 0.0101, "median_ttft": 0.15, "tput_per_gpu": 200.0,
                       "output_tput_per_gpu": 100.0, "input_tput_per_gpu": 100.0}}
    rec.update(over)
    return rec


def test_a_point_becomes_rows_run_as_inferencex_ran_it(tmp_path: Path) -> None:
    export = tmp_path / "benchmarks.json"
    export.write_text(json.dumps([
        _record(),
        _record(framework="dynamo-trt", disagg=True, is_multinode=True),  # disaggregated
        _record(framework="atom"),  # an engine the simulator does not model
        _record(hardware="mi355x", precision="fp4", decode_tp=4, decode_ep=4,
                decode_dp_attention=True, spec_method="mtp", isl=8192, osl=1024, conc=64,
                image="lmsysorg/sglang:v0.5.12-rocm700-mi35x",
                metrics={"median_tpot": 0.02, "tput_per_gpu": 900.0}),  # no output split
    ]))
    rows, left_out = inferencex_rows(export, ttft=True)
    assert left_out == {"disaggregated or multi-node": 1, "framework 'atom'": 1}
    by_id = {r.id: r for r in rows}
    tpot = by_id["ifx-dsr1-h200-fp8-sglang-tp8ep1-1024-1024-c4-2026-03-01-tpot"]
    assert tpot.metric == "tpot_ms" and tpot.value == pytest.approx(10.1)  # seconds -> ms
    assert (tpot.isl, tpot.osl, tpot.range_ratio, tpot.requests) == (922, 922, 0.8, 40)
    assert tpot.engine_version == "0.5.9" and tpot.split == "report"
    assert by_id["ifx-dsr1-h200-fp8-sglang-tp8ep1-1024-1024-c4-2026-03-01-ttft"].value == \
        pytest.approx(150.0)
    amd = [r for r in rows if r.hardware == "MI355X"]
    assert {r.metric for r in amd} == {"tpot_ms", "total_tps_per_gpu"}  # no TTFT in the record
    assert amd[0].precision == "mxfp4" and amd[0].engine_version == "0.5.12"
    assert amd[0].parallel.attention_dp and amd[0].parallel.ep == 4
    assert amd[0].knobs["spec_draft_tokens"] == 3 and amd[0].knobs["kv_dtype"] == "fp8"

    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.sim", "validate", "--no-plot", "--inferencex",
         str(export)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "left out: 1 (disaggregated or multi-node), 1 (framework 'atom')" in proc.stdout
    assert "ifx-dsr1-h200-fp8-sglang-tp8ep1-1024-1024-c4-2026-03-01-tpot" in proc.stdout
    assert "report: 4/4 rows simulated" in proc.stdout  # TTFT only with --ttft


@pytest.mark.parametrize(("content", "expected"), [
    ("{not json", "not JSON"),
    ('{"a": 1}', "expected InferenceX's JSON array of records"),
    (json.dumps([_record(), {"hardware": "h200"}]), "[1]: expected a record with metrics"),
    (json.dumps([_record(decode_tp=None)]), "[0]"),
    (json.dumps([{k: v for k, v in _record().items() if k != "conc"}]), "[0].conc: missing"),
    (json.dumps([_record(metrics={"median_tpot": -1})]), "[0]: value"),
])
def test_a_malformed_export_is_one_line_and_exit_2(tmp_path: Path, content: str,
                                                    expected: str) -> None:
    export = tmp_path / "bad.json"
    export.write_text(content)
    with pytest.raises(CatalogError) as exc:
        inferencex_rows(export)
    assert expected in str(exc.value)
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.sim", "validate", "--no-plot", "--inferencex",
         str(export)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and str(export) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ttft_rows_need_an_inferencex_export() -> None:
    proc = subprocess.run([sys.executable, "-m", "infermatrix.sim", "validate", "--ttft"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--inferencex" in proc.stderr
