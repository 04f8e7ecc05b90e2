"""Result JSON: readable by bench_serving-key post-processing; written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infermatrix.client import SCHEMA_VERSION, run_benchmark_sync, write_result

STATS = ("mean", "median", "std", "p99")
METRICS = ("ttft", "tpot", "itl", "e2el")


def inferencemax_style_reader(path: Path, gpus: int) -> dict[str, Any]:
    """What InferenceMAX-style post-processing does with a bench_serving result file:
    only the documented bench_serving keys, latencies to seconds, per-GPU throughput."""
    data = json.loads(path.read_text())
    row: dict[str, Any] = {
        "model": data["model_id"],
        "conc": int(data["max_concurrency"]),
        "tput_per_gpu": float(data["total_token_throughput"]) / gpus,
        "output_tput_per_gpu": float(data["output_throughput"]) / gpus,
        "request_throughput": float(data["request_throughput"]),
        "completed": int(data["completed"]),
        "num_prompts": int(data["num_prompts"]),
        "duration": float(data["duration"]),
        "total_input_tokens": int(data["total_input_tokens"]),
        "total_output_tokens": int(data["total_output_tokens"]),
    }
    for stat in STATS:
        for m in METRICS:
            row[f"{stat}_{m}"] = float(data[f"{stat}_{m}_ms"]) / 1000.0
    row["interactivity"] = 1000.0 / float(data["median_tpot_ms"])
    for k in ("date", "backend", "tokenizer_id", "request_rate", "burstiness"):
        assert k in data, k
    return row


def test_our_result_is_read_by_inferencemax_style_postprocessing(
    serve: Any, make_cfg: Any, tmp_path: Path
) -> None:
    srv = serve(ttft=0.02, tpot=0.005)
    result = run_benchmark_sync(
        make_cfg(
            srv, num_prompts=8, max_concurrency=2, goodput={"ttft": 1000}, metadata={"gpu": "fake"}
        )
    )
    path = write_result(result, tmp_path / "sub" / "res.json")
    row = inferencemax_style_reader(path, gpus=8)
    assert row["conc"] == 2 and row["completed"] == 8
    assert 0.02 <= row["median_ttft"] < 0.5  # server TTFT 20 ms; seconds, as the reader wants
    assert 50 < row["interactivity"] <= 205  # server TPOT 5 ms -> <= 200 tok/s/user
    data = json.loads(path.read_text())
    assert "request_goodput" in data and "request_goodput:" not in data
    assert data["schema_version"] == SCHEMA_VERSION and data["client_version"]
    assert data["failed"] == 0 and data["error_counts"] == {}
    assert data["settings"]["max_concurrency"] == 2 and data["gpu"] == "fake"


def test_write_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_result({"a": 1, "nan": float("nan"), "inf": [float("inf")]}, path)
    assert json.loads(path.read_text()) == {"a": 1, "nan": None, "inf": [None]}
    with pytest.raises(TypeError):
        write_result({"bad": object()}, path)
    assert json.loads(path.read_text())["a"] == 1  # old file intact
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp files left


def test_detailed_fields(serve: Any, make_cfg: Any) -> None:
    srv = serve(fail_every=3)
    r = run_benchmark_sync(make_cfg(srv, num_prompts=6, save_detailed=True))
    assert len(r["ttfts"]) == len(r["input_lens"]) == len(r["itls"]) == 6
    assert sum(1 for e in r["errors"] if e) == r["failed"] == 2
    assert all(x is None for x, e in zip(r["ttfts"], r["errors"], strict=True) if e)
