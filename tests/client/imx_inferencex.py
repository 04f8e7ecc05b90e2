"""What InferenceX does with a benchmark result file after every single-node run, written here
from the documented behaviour of its utils/process_result.py and utils/aggregate_power.py
(SemiAnalysisAI/InferenceX) — none of their code. A result our client writes must survive it.

process_result.py: reads the environment its workflow sets (RUNNER_TYPE, FRAMEWORK, PRECISION,
SPEC_DECODING, RESULT_FILENAME, ISL, OSL, DISAGG, MODEL_PREFIX, IMAGE; single node: TP, EP_SIZE,
DP_ATTENTION; optional PP_SIZE, DCP_SIZE, PCP_SIZE), loads ``$RESULT_FILENAME.json``, reads
``int(max_concurrency)``, ``model_id``, ``float(total_token_throughput)`` and
``float(output_throughput)`` (per GPU: TP × PP × PCP), then converts **every** top-level key
ending in ``ms`` with ``float(v) / 1000`` (the ``_ms`` dropped from its name) and every key
containing ``tpot`` with ``1000 / float(v)`` (``tpot`` renamed ``intvty``).

aggregate_power.py: the measured window is ``benchmark_start_time_unix`` /
``benchmark_end_time_unix`` with ``duration``: all three plain numbers (not bools), finite,
end > start, duration > 0, and ``|duration − (end − start)| ≤ max(0.5 s, 1 %)``, else the
reason is ``invalid_benchmark_window`` (or ``benchmark_duration_mismatch``). ``completed``,
``total_input_tokens`` and ``total_output_tokens`` must be ints > 0. The GPU telemetry CSV
(nvidia-smi ``timestamp, index, power.draw``) must bracket the window for every GPU with no
in-window gap over 3 s; the energy is integrated per GPU with the trapezoid rule.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

BASE_ENV = (
    "RUNNER_TYPE",
    "FRAMEWORK",
    "PRECISION",
    "SPEC_DECODING",
    "RESULT_FILENAME",
    "ISL",
    "OSL",
    "DISAGG",
    "MODEL_PREFIX",
    "IMAGE",
)
SINGLE_NODE_ENV = ("TP", "EP_SIZE", "DP_ATTENTION")
MAX_SAMPLE_GAP_S = 3.0


def workflow_env(result_filename: str, isl: int, osl: int, tp: int = 8) -> dict[str, str]:
    """The variables benchmark-tmpl.yml gives its "Process result" step (single node)."""
    return {
        "RUNNER_TYPE": "h200",
        "FRAMEWORK": "vllm",
        "PRECISION": "fp8",
        "SPEC_DECODING": "none",
        "RESULT_FILENAME": result_filename,
        "ISL": str(isl),
        "OSL": str(osl),
        "DISAGG": "false",
        "MODEL_PREFIX": "llama70b",
        "IMAGE": "vllm/vllm-openai:latest",
        "TP": str(tp),
        "EP_SIZE": "1",
        "DP_ATTENTION": "false",
        "PP_SIZE": "1",
        "DCP_SIZE": "1",
        "PCP_SIZE": "1",
        "RANDOM_RANGE_RATIO": "0.8",
    }


def process_result(env: Mapping[str, str], workdir: Path) -> dict[str, Any]:
    """The aggregate process_result.py writes as agg_$RESULT_FILENAME.json (raises where it
    raises: KeyError, TypeError, ValueError, ZeroDivisionError)."""
    missing = [v for v in (*BASE_ENV, *SINGLE_NODE_ENV) if v not in env]
    if missing:
        raise OSError(f"Missing required environment variables: {', '.join(missing)}")
    if env["DISAGG"].lower() == "true":
        raise ValueError("Disaggregated mode requires multinode setup.")
    bmk = json.loads((workdir / f"{env['RESULT_FILENAME']}.json").read_text())
    gpus = int(env["TP"]) * int(env.get("PP_SIZE", "1")) * int(env.get("PCP_SIZE", "1"))
    total, output = float(bmk["total_token_throughput"]), float(bmk["output_throughput"])
    data: dict[str, Any] = {
        "hw": env["RUNNER_TYPE"],
        "conc": int(bmk["max_concurrency"]),
        "image": env["IMAGE"],
        "model": bmk["model_id"],
        "framework": env["FRAMEWORK"],
        "precision": env["PRECISION"],
        "isl": int(env["ISL"]),
        "osl": int(env["OSL"]),
        "tp": int(env["TP"]),
        "ep": int(env["EP_SIZE"]),
        "tput_per_gpu": total / gpus,
        "output_tput_per_gpu": output / gpus,
        "input_tput_per_gpu": (total - output) / gpus,
    }
    for key, value in bmk.items():
        if key.endswith("ms"):
            data[key.replace("_ms", "")] = float(value) / 1000.0
        if "tpot" in key:
            data[key.replace("_ms", "").replace("tpot", "intvty")] = 1000.0 / float(value)
    return data


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def benchmark_window(bmk: Mapping[str, Any]) -> tuple[tuple[float, float] | None, list[str]]:
    """The measured window aggregate_power.py integrates over, and its validity reasons."""
    start, end, duration = (
        bmk.get(k) for k in ("benchmark_start_time_unix", "benchmark_end_time_unix", "duration")
    )
    if not all(_number(v) for v in (start, end, duration)):
        return None, ["invalid_benchmark_window"]
    start, end, duration = float(start), float(end), float(duration)  # type: ignore[arg-type]
    if not all(math.isfinite(v) for v in (start, end, duration)) or end <= start or duration <= 0:
        return None, ["invalid_benchmark_window"]
    reasons = []
    if abs(duration - (end - start)) > max(0.5, (end - start) * 0.01):
        reasons.append("benchmark_duration_mismatch")
    for key, reason in (
        ("completed", "invalid_successful_query_count"),
        ("total_input_tokens", "invalid_input_token_count"),
        ("total_output_tokens", "invalid_output_token_count"),
    ):
        if not _count(bmk.get(key)):
            reasons.append(reason)
    return (start, end), reasons


def write_gpu_metrics(path: Path, start: float, end: float, gpus: int, step: float = 0.5) -> None:
    """nvidia-smi --query-gpu=timestamp,index,power.draw --format=csv, local wall-clock
    timestamps, sampled every ``step`` s from before the window to after it."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["timestamp", " index", " power.draw [W]"])
        t = start - 2.0
        while t <= end + 2.0:
            stamp = datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
            for gpu in range(gpus):
                w.writerow([stamp, f" {gpu}", f" {500.0 + gpu:.2f} W"])
            t += step


def power_reasons(csv_path: Path, window: tuple[float, float], gpus: int) -> list[str]:
    """Why the telemetry cannot be integrated over ``window`` (empty: a valid figure)."""
    start, end = window
    samples: dict[str, list[float]] = {}
    with csv_path.open(newline="") as f:
        rows = csv.DictReader(f, skipinitialspace=True)
        for row in rows:
            row = {k.strip(): v for k, v in row.items()}
            t = datetime.strptime(row["timestamp"].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            if start - MAX_SAMPLE_GAP_S <= t <= end + MAX_SAMPLE_GAP_S:
                samples.setdefault(row["index"].strip(), []).append(t)
    reasons = [] if len(samples) == gpus else ["expected_gpu_count_mismatch"]
    for times in samples.values():
        times.sort()
        if len(times) < 2:
            reasons.append("insufficient_power_samples")
        elif times[0] > start or times[-1] < end:
            reasons.append("benchmark_window_not_bracketed")
        elif max(b - a for a, b in zip(times, times[1:], strict=False)) > MAX_SAMPLE_GAP_S:
            reasons.append("sampling_gap_exceeded")
    return sorted(set(reasons))
