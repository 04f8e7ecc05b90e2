"""The result JSON: bench_serving's field names (so existing post-processing reads it) plus ours,
written atomically."""

from __future__ import annotations

import json
import math
import os
import platform
import tempfile
import time
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
    window: tuple[float, float] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``window``: the measured interval as (start, end) ``perf_counter`` values; ``extra``:
    more top-level fields (e.g. the drawn length ranges)."""
    now = datetime.now(UTC)
    measured = metrics["completed"] + metrics["failed"]
    res: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "client": CLIENT_NAME,
        "client_version": client_version(),
        "date": now.strftime("%Y%m%d-%H%M%S"),
        "timestamp_utc": now.isoformat(timespec="seconds"),
        "backend": cfg.backend,
        "endpoint": cfg.url,
        # vLLM's: --model, also when requests carry --served-model-name
        "model_id": cfg.model if cfg.served_model_name and cfg.model else model_id,
        "tokenizer_id": tokenizer_id,
        "dataset_name": cfg.dataset_name,
        # requests actually measured (shared-prefix and trace decide their own count)
        "num_prompts": measured,
        # bench_serving writes "inf" as a string: JSON has no infinity.
        "request_rate": "inf" if math.isinf(cfg.request_rate) else cfg.request_rate,
        "burstiness": cfg.burstiness,
        # InferenceX's process_result.py reads int(max_concurrency): without a cap, the most
        # that could be in flight (every request); settings.max_concurrency keeps the flag
        "max_concurrency": cfg.max_concurrency or measured,
        "random_input_len": cfg.random_input_len,
        "random_output_len": cfg.random_output_len,
        "random_range_ratio": cfg.ratio,
        # whose meaning of the ratio applied, and the intervals lengths were drawn from
        "range_ratio_style": cfg.ratio_style,
        "random_input_len_range": list(cfg.length_range(cfg.random_input_len)),
        "random_output_len_range": list(cfg.length_range(cfg.random_output_len)),
        "use_chat_template": cfg.use_chat_template,
        "ignore_eos": cfg.ignore_eos,
        "seed": cfg.seed,
        "num_warmups": cfg.num_warmups,
        "warmup_failed": warmup_failed,
    }
    if window is not None:
        res.update(unix_window(*window))
    res.update(extra or {})
    res.update(metrics)
    res["num_requests"] = measured
    res["max_error_rate"] = cfg.max_error_rate
    res["passed"] = metrics["error_rate"] <= cfg.max_error_rate and metrics["completed"] > 0
    res["goodput_slo"] = {f"{k}_ms": v for k, v in cfg.goodput.items()} or None
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
    return post_processable(res)


def unix_window(t0: float, t_end: float) -> dict[str, float]:
    """The measured interval in Unix seconds (InferenceX's power step integrates GPU power over
    it). One clock offset for both ends, so end − start equals ``duration`` exactly."""
    offset = time.time() - time.perf_counter()
    return {"benchmark_start_time_unix": t0 + offset, "benchmark_end_time_unix": t_end + offset}


def post_processable(res: dict[str, Any]) -> dict[str, Any]:
    """InferenceX's process_result.py converts every top-level key ending in ``ms`` with
    ``float(v) / 1000`` and every key containing ``tpot`` with ``1000 / float(v)``: such a key
    must hold a number. A statistic without data (e.g. TPOT when every answer is one token) is
    left out and named in ``metrics_without_data`` instead of written as null."""
    empty = [k for k, v in res.items() if (k.endswith("ms") or "tpot" in k) and v is None]
    for k in empty:
        del res[k]
    if empty:
        res["metrics_without_data"] = empty
    return res


def settings(cfg: BenchConfig) -> dict[str, Any]:
    d = cfg.model_dump(mode="python")
    d["request_rate"] = "inf" if math.isinf(cfg.request_rate) else cfg.request_rate
    return d


def default_filename(result: dict[str, Any]) -> str:
    """bench_serving-style: {backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json"""
    model = str(result.get("model_id", "model")).rstrip("/").split("/")[-1]
    cap = (result.get("settings") or {}).get("max_concurrency")
    conc = f"-concurrency{cap}" if cap else ""
    return f"{result['backend']}-{result['request_rate']}qps{conc}-{model}-{result['date']}.json"


RESULT_MODE = 0o644  # as bench_serving's plain open() leaves them under the usual umask


def write_result(result: dict[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``result`` as JSON atomically (temp file in the same directory + rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(result), indent=2, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, RESULT_MODE)  # mkstemp's 0600 would hide results from a collecting user
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def append_jsonl(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """SGLang's --output-file: the result as one line appended to ``path`` (JSON Lines)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(_finite(result), allow_nan=False) + "\n"
    with target.open("a", encoding="utf-8") as f:
        f.write(line)


def _finite(obj: Any) -> Any:
    """NaN/inf are not JSON: write them as null (request_rate is already the string "inf")."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj
