"""Result JSON: readable by bench_serving-key post-processing; written atomically."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infermatrix.client import SCHEMA_VERSION, run_benchmark_sync, write_result


def test_result_keys(serve: Any, make_cfg: Any, tmp_path: Path) -> None:
    """(InferenceX's own post-processing of these files: test_inferencex_compat.py.)"""
    srv = serve(ttft=0.02, tpot=0.005)
    result = run_benchmark_sync(
        make_cfg(
            srv, num_prompts=8, max_concurrency=2, goodput={"ttft": 1000}, metadata={"gpu": "fake"}
        )
    )
    path = write_result(result, tmp_path / "sub" / "res.json")
    data = json.loads(path.read_text())
    for k in ("date", "backend", "tokenizer_id", "request_rate", "burstiness", "model_id"):
        assert k in data, k
    assert data["max_concurrency"] == 2 and data["completed"] == 8
    assert "request_goodput" in data and "request_goodput:" not in data
    assert data["schema_version"] == SCHEMA_VERSION and data["client_version"]
    assert data["failed"] == 0 and data["error_counts"] == {}
    assert data["settings"]["max_concurrency"] == 2 and data["gpu"] == "fake"
    assert data["random_input_len_range"] == [16, 16]  # vLLM's r = 0: exactly L


def test_statistic_without_data_is_left_out(serve: Any, make_cfg: Any) -> None:
    """One-token answers have no TPOT: no null under a *_ms/*tpot* key (post-processing
    would divide it), the names are listed instead; no cap: every request could be in flight."""
    srv = serve(output_tokens=1)
    r = run_benchmark_sync(make_cfg(srv, num_prompts=3, max_concurrency=None))
    assert "median_tpot_ms" not in r and "median_tpot_ms" in r["metrics_without_data"]
    assert all(r[k] is not None for k in r if k.endswith("ms") or "tpot" in k)
    assert r["max_concurrency"] == 3 and r["settings"]["max_concurrency"] is None


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
