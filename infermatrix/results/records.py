"""Records: one flat row per (run, job, concurrency level), normalised from a raw level result.

``normalise`` reads the bench_serving JSON and its ``infermatrix`` block (launch/job.py) and
computes the derived metrics of docs/results.md. A metric that cannot be computed is None.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

RECORD_SCHEMA = 1
record_schema = RECORD_SCHEMA  # the version of the Record layout (also a field of each record)
LEVEL_KIND = "level-result"
MODES = ("aggregated", "disaggregated")
STATUSES = ("ok", "failed")
LATENCY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_[a-z0-9_]+_ms$")
RAW_METRICS = ("duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
               "request_throughput", "output_throughput", "total_token_throughput",
               "request_goodput")
Key = tuple[str, str, int]
NaturalKey = tuple[str, str, str, int]


class ForeignResult(ValueError):
    """JSON that is not an infermatrix level result."""


class InvalidResult(ValueError):
    """A level result whose infermatrix block is unusable."""


class Pool(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str = "both"
    instances: int = Field(default=1, ge=1)
    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    ep: int = Field(default=1, ge=1)
    cp: int = Field(default=1, ge=1)
    attention_dp: bool = False


class Record(BaseModel):
    """One measured level. Field names and meanings: docs/results.md."""

    model_config = ConfigDict(extra="ignore")

    record_schema: int = RECORD_SCHEMA
    # ---- identity
    run_id: str = Field(min_length=1)
    job_id: str = Field(min_length=1)
    concurrency: int = Field(ge=1)
    fingerprint: str = ""
    recipe: str = Field(min_length=1)
    model: str = Field(min_length=1)
    hardware: str = Field(min_length=1)
    engine: str = Field(min_length=1)
    engine_version: str | None = None
    image: str | None = None
    precision: str = ""
    mode: Literal["aggregated", "disaggregated"] = "aggregated"
    topology: str = ""
    pools: list[Pool] = Field(default_factory=list)
    gpus_total: int = Field(ge=1)
    gpus_prefill: int = Field(default=0, ge=0)
    gpus_decode: int = Field(default=0, ge=0)
    workload: str = Field(min_length=1)
    isl: int | None = None
    osl: int | None = None
    runner: str = ""
    launcher: str | None = None
    simulated: bool = False
    git_sha: str | None = None
    client_version: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    status: str = "ok"  # ok | failed (reports may mark "gated")
    error: str | None = None
    source: str | None = None
    # ---- raw metrics (bench_serving names)
    duration: float | None = None
    completed: int | None = None
    failed: int | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    input_throughput: float | None = None
    total_token_throughput: float | None = None
    request_goodput: float | None = None
    latency: dict[str, float | None] = Field(default_factory=dict)
    # ---- derived
    output_tput_per_gpu: float | None = None
    input_tput_per_gpu: float | None = None
    total_tput_per_gpu: float | None = None
    interactivity: float | None = None
    e2e_interactivity: float | None = None
    error_rate: float | None = None
    usd_per_gpu_hour: float | None = None
    usd_per_m_output_tokens: float | None = None
    usd_per_m_total_tokens: float | None = None
    avg_power_w: float | None = None
    energy_j: float | None = None
    j_per_output_token: float | None = None
    j_per_token: float | None = None
    # ---- uncertainty: metric -> [low, high], the 95 % bootstrap interval from the level's
    # per-request samples (results/uncertainty.py); empty when the result has none
    ci95: dict[str, list[float]] = Field(default_factory=dict)
    samples: int | None = None  # successful requests the intervals were drawn from

    @property
    def key(self) -> Key:
        """The store key: one row per (run, job, level)."""
        return (self.run_id, self.job_id, self.concurrency)

    @property
    def natural_key(self) -> NaturalKey:
        """The same configuration measured again (compare matches on it)."""
        return (self.recipe, self.workload, self.runner, self.concurrency)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def metric(self, name: str) -> float | None:
        """A numeric field or latency statistic by name; None when absent or not a number."""
        value = getattr(self, name) if name in _FIELD_NAMES else self.latency.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)


_FIELD_NAMES = frozenset(Record.model_fields)  # looked up per metric: a class attribute costs more


# ---------------------------------------------------------------- normalisation


def _num(raw: Mapping[str, Any], name: str) -> float | None:
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidResult(f"{name}: not a number ({value!r})")
    return float(value) if math.isfinite(value) else None


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _div(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _per_million(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """US$ per million tokens, from the deployment's $/hour and its token rate."""
    if usd_per_hour is None or not tokens_per_s:
        return None
    return usd_per_hour / (tokens_per_s * 3600.0) * 1e6


def topology_label(mode: str, pools: Iterable[Pool]) -> str:
    """``tp8``, ``2×tp4``, ``P 1×tp4 + D 2×tp4 ep4 adp``."""
    parts = []
    for p in pools:
        dp = 1 if p.attention_dp and p.dp == p.tp else p.dp  # the default with attention DP
        extra = (("pp", p.pp), ("dp", dp), ("ep", p.ep), ("cp", p.cp))
        bits = [f"tp{p.tp}", *(f"{name}{v}" for name, v in extra if v > 1)]
        if p.attention_dp:
            bits.append("adp")
        text = " ".join(bits)
        if mode == "disaggregated":
            role = {"prefill": "P", "decode": "D"}.get(p.role, p.role)
            text = f"{role} {p.instances}×{text}"
        elif p.instances > 1:
            text = f"{p.instances}×{text}"
        parts.append(text)
    return " + ".join(parts)


def _identity(block: Mapping[str, Any]) -> dict[str, Any]:
    for name in ("run_id", "job_id", "recipe", "model", "hardware", "engine", "workload"):
        if not isinstance(block.get(name), str) or not block[name]:
            raise InvalidResult(f"infermatrix.{name}: missing")
    conc = block.get("concurrency")
    if isinstance(conc, bool) or not isinstance(conc, int) or not 1 <= conc < 2**31:
        raise InvalidResult(f"infermatrix.concurrency: must be a positive integer, not {conc!r}")
    mode = block.get("mode", "aggregated")
    if mode not in MODES:
        raise InvalidResult(f"infermatrix.mode: unknown mode {mode!r}")
    gpus = block.get("gpus")
    if not isinstance(gpus, Mapping):
        raise InvalidResult("infermatrix.gpus: missing")
    counts = {k: gpus.get(k) or 0 for k in ("total", "prefill", "decode")}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in counts.values()):
        raise InvalidResult(f"infermatrix.gpus: not integers ({dict(gpus)!r})")
    if counts["total"] < 1:
        raise InvalidResult("infermatrix.gpus.total: no GPUs")
    if mode == "disaggregated" and (counts["prefill"] < 1 or counts["decode"] < 1):
        raise InvalidResult("infermatrix.gpus: a disaggregated result needs prefill and "
                            "decode GPUs")
    status = block.get("status", "ok")
    if status not in STATUSES:
        raise InvalidResult(f"infermatrix.status: {status!r} is not ok or failed")
    pools = block.get("pools") or []
    if not isinstance(pools, list):
        raise InvalidResult("infermatrix.pools: not a list")
    fields = {k: block.get(k) for k in (
        "run_id", "job_id", "fingerprint", "recipe", "model", "hardware", "engine",
        "engine_version", "image", "precision", "workload", "isl", "osl", "runner", "launcher",
        "git_sha", "client_version", "started_at", "finished_at", "error")}
    fields = {k: v for k, v in fields.items() if v is not None}
    return {**fields, "concurrency": conc, "mode": mode, "status": status, "pools": pools,
            "simulated": bool(block.get("simulated", False)), "gpus_total": counts["total"],
            "gpus_prefill": counts["prefill"], "gpus_decode": counts["decode"]}


def derive(raw: Mapping[str, Any], block: Mapping[str, Any], mode: str,
           gpus: tuple[int, int, int]) -> dict[str, Any]:
    """Raw and derived metrics (docs/results.md, "Derived metrics")."""
    total, prefill, decode = gpus
    m = {name: _num(raw, name) for name in RAW_METRICS}
    latency = {k: _num(raw, k) for k, v in raw.items()
               if LATENCY.match(k) and (v is None or isinstance(v, int | float))}
    dur, out_tp, tot_tp = m["duration"], m["output_throughput"], m["total_token_throughput"]
    tin, tout = m["total_input_tokens"], m["total_output_tokens"]
    done, failed = m["completed"], m["failed"]
    if tin is not None and dur:
        in_tp = tin / dur
    elif tot_tp is not None and out_tp is not None:
        in_tp = tot_tp - out_tp
    else:
        in_tp = None
    disagg = mode == "disaggregated"
    tpot, e2el = latency.get("median_tpot_ms"), latency.get("median_e2el_ms")
    usd = _num(block, "usd_per_gpu_hour")
    paid = usd * total if usd is not None else None  # every GPU of every pool is paid for
    power = _num(block, "avg_power_w")
    energy = _num(block, "energy_j")
    if energy is None and power is not None and dur:
        energy = power * dur
    finished = (done or 0) + (failed or 0)
    per_request = _div(tout, done) if done else None
    return {
        **{k: m[k] for k in ("duration", "request_throughput", "output_throughput",
                             "total_token_throughput", "request_goodput")},
        "completed": _int(done), "failed": _int(failed),
        "total_input_tokens": _int(tin), "total_output_tokens": _int(tout),
        "input_throughput": in_tp, "latency": latency,
        "output_tput_per_gpu": _div(out_tp, decode if disagg else total),
        "input_tput_per_gpu": _div(in_tp, prefill if disagg else total),
        "total_tput_per_gpu": _div(tot_tp, total),
        "interactivity": _div(1000.0, tpot) if tpot and tpot > 0 else None,
        "e2e_interactivity": _div(per_request, e2el / 1000.0) if e2el and e2el > 0 else None,
        "error_rate": (failed or 0) / finished if finished else 1.0,
        "usd_per_gpu_hour": usd,
        "usd_per_m_output_tokens": _per_million(paid, out_tp),
        "usd_per_m_total_tokens": _per_million(paid, tot_tp),
        "avg_power_w": power, "energy_j": energy,
        "j_per_output_token": _div(energy, tout),
        "j_per_token": _div(energy, tin + tout) if tin is not None and tout is not None else None,
    }


def _uncertainty(samples: Any, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The level's bootstrap intervals (none without per-request samples)."""
    from .uncertainty import intervals  # numpy: only for results that carry samples

    if not isinstance(samples, Mapping):
        return {}
    values = {**metrics, **metrics["latency"]}
    ttfts = samples.get("ttft_ms")
    return {"ci95": intervals(samples, values),
            "samples": len(ttfts) if isinstance(ttfts, list) else None}


def normalise(raw: Any, source: str | None = None) -> Record:
    """The record of one raw level result.

    Raises ForeignResult when ``raw`` has no ``infermatrix`` block of kind ``level-result`` and
    InvalidResult (one-line reason) when the block is there but unusable.
    """
    block = raw.get("infermatrix") if isinstance(raw, Mapping) else None
    if not isinstance(block, Mapping) or block.get("kind") != LEVEL_KIND:
        raise ForeignResult("not an infermatrix level result")
    ident = _identity(block)
    try:
        pools = [Pool.model_validate(p) for p in ident.pop("pools")]
    except (ValidationError, TypeError) as exc:
        raise InvalidResult(f"infermatrix.pools: {_first_error(exc)}") from None
    gpus = (ident["gpus_total"], ident["gpus_prefill"], ident["gpus_decode"])
    metrics = derive(raw, block, ident["mode"], gpus)
    metrics.update(_uncertainty(raw.get("request_samples"), metrics))
    try:
        return Record(**ident, pools=pools, topology=topology_label(ident["mode"], pools),
                      source=source, **metrics)
    except ValidationError as exc:
        raise InvalidResult(_first_error(exc)) from None


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
    return str(exc)


# ---------------------------------------------------------------- run order


def parse_time(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


_LATEST = datetime.max.replace(tzinfo=UTC)


def order_runs(starts: Iterable[tuple[str, str | None]]) -> list[str]:
    """Run ids from (run id, a started_at of it): by earliest start, then id."""
    first: dict[str, datetime] = {}
    for run_id, stamp in starts:
        when = parse_time(stamp) or _LATEST
        if run_id not in first or when < first[run_id]:
            first[run_id] = when
    return sorted(first, key=lambda r: (first[r], r))


def run_order(records: Iterable[Record]) -> list[str]:
    """The runs of ``records``, oldest first (earliest ``started_at``, then id)."""
    return order_runs((r.run_id, r.started_at) for r in records)
