"""Hand-written raw level results for the results and report tests.

``make_raw`` is one level with round numbers, so every derived metric can be worked out by
hand (see test_records.py). ``messy_run`` is a run folder with 6 valid levels (5 ok, 1 failed)
and one or more files of every other collect bucket; ``MESSY_COUNTS`` says how many.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

RUN = "20261122T011700Z-abc123"
RECIPE = "deepseek-r1-0528/h200-sglang-fp8"
DISAGG_RECIPE = "deepseek-r1-0528/gb200-trtllm-fp4-disagg"

BLOCK: dict[str, Any] = {
    "schema_version": 1, "kind": "level-result", "run_id": RUN,
    "job_id": "deepseek-r1-0528.h200-sglang-fp8.fixed-1k-1k.h200-dgx-0a1b2c3d",
    "fingerprint": "0a1b2c3d4e5f6071", "recipe": RECIPE, "model": "deepseek-r1-0528",
    "hardware": "H200", "engine": "sglang", "engine_version": "0.4.9.post1",
    "image": "lmsysorg/sglang:v0.4.9.post1-cu126", "precision": "fp8", "mode": "aggregated",
    "gpus": {"total": 8, "prefill": 0, "decode": 0},
    "pools": [{"role": "both", "instances": 1, "tp": 8, "pp": 1, "dp": 1, "ep": 1, "cp": 1,
               "attention_dp": False}],
    "workload": "fixed-1k-1k", "isl": 1024, "osl": 512, "runner": "h200-dgx",
    "launcher": "local", "simulated": True, "git_sha": "a2da411", "client_version": "0.1.0",
    "usd_per_gpu_hour": 3.5, "energy_j": None, "avg_power_w": None,
    "joules_per_output_token": None, "concurrency": 4, "started_at": "2026-11-22T01:17:10Z",
    "finished_at": "2026-11-22T01:18:50Z", "status": "ok", "error": None,
}
# 100 s, 90 done + 10 failed, 1000 input and 500 output tokens per completed request
METRICS: dict[str, Any] = {
    "duration": 100.0, "completed": 90, "failed": 10, "error_rate": 0.1,
    "total_input_tokens": 90_000, "total_output_tokens": 45_000, "request_throughput": 0.9,
    "output_throughput": 450.0, "total_token_throughput": 1350.0, "request_goodput": None,
    "mean_ttft_ms": 520.0, "median_ttft_ms": 500.0, "std_ttft_ms": 40.0, "p99_ttft_ms": 900.0,
    "mean_tpot_ms": 21.0, "median_tpot_ms": 20.0, "std_tpot_ms": 2.0, "p99_tpot_ms": 30.0,
    "mean_itl_ms": 20.5, "median_itl_ms": 19.0, "p99.9_itl_ms": 80.0,
    "mean_e2el_ms": 12_800.0, "median_e2el_ms": 12_500.0, "p99_e2el_ms": 16_000.0,
    "median_itl_per_token_ms": 19.5,
    "schedule_lag": {"mean_ms": 0.1, "p50_ms": 0.1, "p99_ms": 0.2, "max_ms": 0.3},  # not a latency stat
    "interactivity": 50.0,
}
DISAGG_BLOCK: dict[str, Any] = {
    "recipe": DISAGG_RECIPE, "hardware": "GB200", "engine": "trtllm", "precision": "fp4",
    "job_id": "deepseek-r1-0528.gb200-trtllm-fp4-disagg.fixed-1k-1k.gb200-nvl72-99aa88bb",
    "mode": "disaggregated", "gpus": {"total": 12, "prefill": 4, "decode": 8},
    "pools": [{"role": "prefill", "instances": 1, "tp": 4},
              {"role": "decode", "instances": 2, "tp": 4, "ep": 4, "dp": 4, "attention_dp": True}],
    "runner": "gb200-nvl72", "engine_version": "1.0.0rc4", "image": "nvcr.io/trtllm:1.0.0rc4",
    "fingerprint": "9f8e7d6c5b4a3928",
}


def make_raw(block: dict[str, Any] | None = None, **metrics: Any) -> dict[str, Any]:
    """A bench_serving result with an infermatrix block; ``block`` overrides block fields,
    keyword arguments override top-level metrics."""
    raw = {"schema_version": 1, "client": "infermatrix-bench", "backend": "vllm",
           "max_concurrency": (block or {}).get("concurrency", BLOCK["concurrency"]),
           **copy.deepcopy(METRICS), **metrics}
    raw["infermatrix"] = {**copy.deepcopy(BLOCK), **(block or {})}
    return raw


def level(conc: int, block: dict[str, Any] | None = None, **metrics: Any) -> dict[str, Any]:
    """A level whose throughput rises and interactivity falls with concurrency."""
    tpot = 10.0 + conc
    out_tp = 120.0 * conc ** 0.5
    base = {"median_tpot_ms": tpot, "mean_tpot_ms": tpot * 1.05, "median_e2el_ms": tpot * 520,
            "output_throughput": out_tp, "total_token_throughput": 3 * out_tp,
            "failed": 0, "error_rate": 0.0, **metrics}
    return make_raw({"concurrency": conc, **(block or {})}, **base)


def _write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1),
                        encoding="utf-8")
    return path


def _manifest(job_id: str, files: dict[int, str]) -> dict[str, Any]:
    return {"schema_version": 1, "kind": "job-manifest", "run_id": RUN, "job": {"id": job_id},
            "status": "ok", "levels": [{"concurrency": c, "status": "ok", "file": f}
                                       for c, f in files.items()]}


MESSY_COUNTS = {"records": 6, "manifests": 3, "corrupt": 2, "truncated": 2, "duplicate": 1,
                "foreign": 2, "invalid": 1, "other": 3, "missing": 1}


def messy_run(root: Path) -> Path:
    """``root/RUN``: two jobs (aggregated and disaggregated) and every kind of bad file."""
    run = root / RUN
    a = run / "jobs" / BLOCK["job_id"]
    b = run / "jobs" / DISAGG_BLOCK["job_id"]
    for c in (1, 4, 16):
        _write(a / f"conc-{c}.json", level(c))
    for c in (8, 32):
        _write(b / f"conc-{c}.json", level(c, DISAGG_BLOCK))
    failed = {**DISAGG_BLOCK, "status": "failed", "error": "error rate 40.0% exceeds 5%"}
    _write(b / "conc-64.json", level(64, failed, failed=60, error_rate=0.4))
    # manifests: two jobs (b lists a level that was never written: missing) and the run's
    _write(a / "manifest.json", _manifest(BLOCK["job_id"], {1: "conc-1.json", 4: "conc-4.json",
                                                          16: "conc-16.json"}))
    _write(b / "manifest.json", _manifest(DISAGG_BLOCK["job_id"], {
        8: "conc-8.json", 32: "conc-32.json", 64: "conc-64.json", 128: "conc-128.json"}))
    _write(run / "run.json", {"schema_version": 1, "kind": "run-manifest", "run_id": RUN,
                              "jobs": []})
    # corrupt: not UTF-8; JSON broken in the middle
    _write(a / "conc-99.json", b"\xff\xfe{\x00 not utf-8")
    _write(a / "notes.json", '{"a": 1}} trailing')
    # truncated: a level cut short by a dying writer; an empty file
    _write(b / "conc-256.json", json.dumps(level(256, DISAGG_BLOCK))[:700])
    _write(run / "empty.json", "")
    # duplicate: a copy of a's c=4 level later in name order (the first one wins)
    _write(run / "zz-copy" / "conc-4.json", level(4))
    # foreign: a bench_serving result without our block; a JSON list
    plain = level(2)
    del plain["infermatrix"]
    _write(a / "bench-vllm.json", plain)
    _write(run / "config.json", [1, 2, 3])
    # invalid: our block, but concurrency 0
    _write(b / "conc-0.json", level(0, DISAGG_BLOCK))
    # other: logs and a writer's temp file
    _write(a / "server-0.log", "INFO started\n")
    _write(a / "gpu-metrics.csv", "t,gpu,power_w\n")
    _write(a / ".conc-16.json.x1y2.tmp", "{")
    return run
