"""The result JSON: bench_serving's field names (so existing post-processing reads it) plus ours,
written atomically."""

from __future__ import annotations

import json
import math
import os
import platform
import tempfile
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from .config import BenchConfig

SCHEMA_VERSION = 1
CLIENT_NAME = "infermatrix-bench"


def client_version() -> str:
    try:
        return metadata.version("infermatrix")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def build_result(
    cfg: BenchConfig,
    model_id: str,
    tokenizer_id: str,
    metrics: dict[str, Any],
    details: dict[str, list[Any]] | None = None,
    *,
    warmup_failed: int = 0,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    now = datetime.now(UTC)
    res: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "client": CLIENT_NAME,
        "client_version": client_version(),
        "date": now.strftime("%Y%m%d-%H%M%S"),
        "timestamp_utc": now.isoformat(timespec="seconds"),
        "backend": cfg.backend,
        "endpoint": cfg.url,
        "model_id": model_id,
        "tokenizer_id": tokenizer_id,
        "dataset_name": cfg.dataset_name,
        # requests actually measured (shared-prefix and trace decide their own count)
        "num_prompts": metrics["completed"] + metrics["failed"],
        # bench_serving writes "inf" as a string: JSON has no infinity.
        "request_rate": "inf" if math.isinf(cfg.request_rate) else cfg.request_rate,
        "burstiness": cfg.burstiness,
        "max_concurrency": cfg.max_concurrency,
        "random_input_len": cfg.random_input_len,
        "random_output_len": cfg.random_output_len,
        "random_range_ratio": cfg.random_range_ratio,
        "ignore_eos": cfg.ignore_eos,
        "seed": cfg.seed,
        "num_warmups": cfg.num_warmups,
        "warmup_failed": warmup_failed,
    }
    res.update(metrics)
    res["num_requests"] = metrics["completed"] + metrics["failed"]
    res["max_error_rate"] = cfg.max_error_rate
    res["passed"] = metrics["error_rate"] <= cfg.max_error_rate and metrics["completed"] > 0
    res["goodput_slo_ms"] = dict(cfg.goodput) or None
    res["settings"] = settings(cfg)
    res["host"] = {"python": platform.python_version(), "platform": platform.platform()}
    if notes:
        res["notes"] = notes
    # Metadata goes top-level like bench_serving's --metadata, without clobbering our keys.
    res["metadata"] = dict(cfg.metadata)
    for k, v in cfg.metadata.items():
        res.setdefault(k, v)
    if details:
        res.update(details)
    return res


def settings(cfg: BenchConfig) -> dict[str, Any]:
    d = cfg.model_dump(mode="python")
    d["request_rate"] = "inf" if math.isinf(cfg.request_rate) else cfg.request_rate
    return d


def default_filename(result: dict[str, Any]) -> str:
    """bench_serving-style: {backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json"""
    model = str(result.get("model_id", "model")).rstrip("/").split("/")[-1]
    conc = f"-concurrency{result['max_concurrency']}" if result.get("max_concurrency") else ""
    return f"{result['backend']}-{result['request_rate']}qps{conc}-{model}-{result['date']}.json"


def write_result(result: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``result`` as JSON atomically (temp file in the same directory + rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(result), indent=2, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _finite(obj: Any) -> Any:
    """NaN/inf are not JSON: write them as null (request_rate is already the string "inf")."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj
