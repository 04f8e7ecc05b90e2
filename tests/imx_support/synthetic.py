"""Generated raw level results, shaped as launch/job.py writes them, for tests and benchmarks.

A ``SynthJob`` is one job of a made-up recipe; ``level_result`` is the raw JSON of one of its
levels (a pure function of the job, the run id and the concurrency: the same configuration in
another run measures the same), ``write_job`` writes a job folder (levels and manifest).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

PRICES = {"H100": 2.5, "H200": 3.5, "B200": 6.0, "GB200": 7.0, "MI300X": 2.2, "MI355X": 3.2}
VERSIONS = {"sglang": "0.4.9.post1", "vllm": "0.9.2", "trtllm": "1.0.0rc4"}
IMAGES = {"sglang": "lmsysorg/sglang:v{}", "vllm": "vllm/vllm-openai:v{}",
          "trtllm": "nvcr.io/nvidia/tensorrt-llm/release:{}"}
WORKLOADS = {"fixed-1k-1k": (1024, 1024), "fixed-1k-8k": (1024, 8192), "fixed-8k-1k": (8192, 1024)}
DEFAULT_START = datetime(2026, 11, 22, tzinfo=UTC)
_RUN_TIME = re.compile(r"^(\d{8}T\d{6}Z)")
_STATS = {"mean": 1.02, "median": 1.0, "std": 0.1, "p50": 1.0, "p90": 1.15, "p99": 1.3}


def _hash(*parts: Any, n: int = 8) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:n]


@dataclass(frozen=True)
class SynthJob:
    model: str = "deepseek-r1-0528"
    hardware: str = "H200"
    engine: str = "sglang"
    precision: str = "fp8"
    tp: int = 8
    prefill_tp: int = 0  # > 0: disaggregated, a prefill instance of this TP + a decode of ``tp``
    variant: str = ""
    workload: str = "fixed-1k-1k"
    concurrency: Sequence[int] = (1, 2, 4)
    speed: float = 1.0  # scales both throughput and interactivity
    simulated: bool = True
    power_w_per_gpu: float | None = None  # set: energy was measured

    @property
    def recipe(self) -> str:
        name = f"{self.hardware.lower()}-{self.engine}-{self.precision}"
        return f"{self.model}/{name}{'-' + self.variant if self.variant else ''}"

    @property
    def runner(self) -> str:
        return f"{self.hardware.lower()}-synth"

    @property
    def job_id(self) -> str:
        base = f"{self.recipe.replace('/', '.')}.{self.workload}.{self.runner}"
        return f"{base}-{_hash(self.recipe, self.workload, self.runner)}"

    @property
    def fingerprint(self) -> str:
        return _hash({**asdict(self), "concurrency": list(self.concurrency)}, n=16)

    @property
    def mode(self) -> str:
        return "disaggregated" if self.prefill_tp else "aggregated"

    @property
    def gpus(self) -> dict[str, int]:
        if self.prefill_tp:
            return {"total": self.prefill_tp + self.tp, "prefill": self.prefill_tp,
                    "decode": self.tp}
        return {"total": self.tp, "prefill": 0, "decode": 0}

    def pools(self) -> list[dict[str, Any]]:
        par = {"pp": 1, "dp": 1, "ep": 1, "cp": 1, "attention_dp": False}
        if self.prefill_tp:
            return [{"role": "prefill", "instances": 1, "tp": self.prefill_tp, **par},
                    {"role": "decode", "instances": 1, "tp": self.tp, **par}]
        return [{"role": "both", "instances": 1, "tp": self.tp, **par}]


def _stats(name: str, median_ms: float) -> dict[str, float]:
    return {f"{stat}_{name}_ms": median_ms * f for stat, f in _STATS.items()}


def _shape(job: SynthJob, conc: int, failed: bool) -> dict[str, Any]:
    """A made-up but self-consistent level: TPOT and TTFT grow with concurrency."""
    isl, osl = WORKLOADS.get(job.workload, (1024, 1024))
    tpot = (6.0 + 0.5 * conc) / job.speed
    ttft = (40.0 + 4.0 * conc) * isl / 1024 / job.speed
    e2el = ttft + tpot * (osl - 1)
    prompts = max(8, 4 * conc)
    bad = math.ceil(0.4 * prompts) if failed else 0
    done = prompts - bad
    duration = prompts / conc * e2el / 1000.0
    tin, tout = done * isl, done * osl
    out: dict[str, Any] = {
        "duration": duration, "completed": done, "failed": bad, "error_rate": bad / prompts,
        "error_counts": {"HTTP 503": bad} if bad else {}, "total_input_tokens": tin,
        "total_output_tokens": tout, "request_throughput": done / duration,
        "output_throughput": tout / duration, "total_token_throughput": (tin + tout) / duration,
    }
    for name, value in (("ttft", ttft), ("tpot", tpot), ("itl", tpot), ("e2el", e2el),
                        ("itl_per_token", tpot)):
        out.update(_stats(name, value))
    out.update(interactivity=1000.0 / tpot, request_goodput=None, num_requests=prompts)
    return out


def _base_time(run_id: str) -> datetime:
    m = _RUN_TIME.match(run_id)
    if m is None:
        return DEFAULT_START
    return datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


SAMPLE_SPREAD = 0.05  # of log(value): each request's TTFT and TPOT around the level's medians


def _request_samples(shape: dict[str, Any], osl: int, n: int, seed: str) -> dict[str, list[float]]:
    """``n`` requests' samples as the client writes them (``request_samples``), seeded."""
    rng = random.Random(seed)
    ttft = [shape["median_ttft_ms"] * math.exp(rng.gauss(0, SAMPLE_SPREAD)) for _ in range(n)]
    tpot = [shape["median_tpot_ms"] * math.exp(rng.gauss(0, SAMPLE_SPREAD)) for _ in range(n)]
    return {"ttft_ms": ttft, "tpot_ms": tpot, "output_tokens": [osl] * n,
            "e2el_ms": [t + p * (osl - 1) for t, p in zip(ttft, tpot, strict=True)]}


def level_result(job: SynthJob, run_id: str, conc: int, *, failed: bool = False,
                 samples: int = 0) -> dict[str, Any]:
    """The raw JSON of one level, as launch/job.py writes ``conc-<N>.json``; ``samples`` > 0:
    with that many requests' samples, so the record carries bootstrap intervals."""
    shape = _shape(job, conc, failed)
    if samples:
        shape["request_samples"] = _request_samples(
            shape, WORKLOADS.get(job.workload, (1024, 1024))[1], samples, f"{job.job_id}/{run_id}/{conc}")
    start = _base_time(run_id)  # levels run one after another, in the job's order
    for c in job.concurrency:
        if c == conc:
            break
        start += timedelta(seconds=math.ceil(_shape(job, c, False)["duration"]) + 5)
    gpus = job.gpus
    power = job.power_w_per_gpu * gpus["total"] if job.power_w_per_gpu else None
    energy = power * shape["duration"] if power is not None else None
    version = VERSIONS.get(job.engine, "1.0")
    block = {
        "schema_version": 1, "kind": "level-result", "run_id": run_id, "job_id": job.job_id,
        "fingerprint": job.fingerprint, "recipe": job.recipe, "model": job.model,
        "hardware": job.hardware, "engine": job.engine, "engine_version": version,
        "image": IMAGES.get(job.engine, "{}").format(version), "precision": job.precision,
        "mode": job.mode, "gpus": gpus, "pools": job.pools(), "workload": job.workload,
        "isl": WORKLOADS.get(job.workload, (1024, 1024))[0],
        "osl": WORKLOADS.get(job.workload, (1024, 1024))[1], "runner": job.runner,
        "launcher": "synthetic", "simulated": job.simulated, "git_sha": None,
        "client_version": "0.1.0", "usd_per_gpu_hour": PRICES.get(job.hardware, 4.0),
        "energy_j": energy, "avg_power_w": power,
        "joules_per_output_token": energy / shape["total_output_tokens"] if energy else None,
        "concurrency": conc, "started_at": _stamp(start),
        "finished_at": _stamp(start + timedelta(seconds=math.ceil(shape["duration"]))),
        "status": "failed" if failed else "ok",
        "error": f"error rate {shape['error_rate']:.1%} exceeds 5%" if failed else None,
    }
    return {"schema_version": 1, "client": "infermatrix-bench", "client_version": "0.1.0",
            "backend": "vllm", "model_id": job.model, "dataset_name": "random",
            "request_rate": "inf", "max_concurrency": conc, "random_input_len": block["isl"],
            "random_output_len": block["osl"], **shape, "passed": not failed, "infermatrix": block}


def write_job(run_dir: Path, job: SynthJob, failed_levels: Sequence[int] = (),
              indent: int | None = 1, samples: int = 0) -> list[Path]:
    """Write ``run_dir/jobs/<job id>/conc-<N>.json`` per level and the job manifest; returns
    the level files (``samples``: as ``level_result``)."""
    run_dir = Path(run_dir)
    job_dir = run_dir / "jobs" / job.job_id
    job_dir.mkdir(parents=True, exist_ok=True)
    written, levels = [], []
    for conc in job.concurrency:
        raw = level_result(job, run_dir.name, conc, failed=conc in failed_levels, samples=samples)
        path = job_dir / f"conc-{conc}.json"
        path.write_text(json.dumps(raw, indent=indent), encoding="utf-8")
        written.append(path)
        block = raw["infermatrix"]
        levels.append({"concurrency": conc, "status": block["status"], "file": path.name,
                       "error": block["error"]})
    first, last = (level_result(job, run_dir.name, c)["infermatrix"] for c in
                   (job.concurrency[0], job.concurrency[-1]))
    manifest = {"schema_version": 1, "kind": "job-manifest", "run_id": run_dir.name,
                "job": {"id": job.job_id, "recipe": job.recipe, "workload": job.workload,
                        "runner": job.runner, "concurrency": list(job.concurrency),
                        "fingerprint": job.fingerprint},
                "status": "partial" if failed_levels else "ok", "error": None, "levels": levels,
                "started_at": first["started_at"], "finished_at": last["finished_at"],
                "launcher": "synthetic"}
    (job_dir / "manifest.json").write_text(json.dumps(manifest, indent=indent), encoding="utf-8")
    return written


MODELS = ("deepseek-r1-0528", "llama-3.1-70b-instruct", "gpt-oss-120b")
HARDWARE = ("H100", "H200", "B200", "GB200", "MI300X", "MI355X")
ENGINES = ("sglang", "vllm", "trtllm")


def _combos() -> Iterator[SynthJob]:
    for round_ in itertools.count():
        for model, workload, hw, engine, tp in itertools.product(
                MODELS, WORKLOADS, HARDWARE, ENGINES, (8, 4)):
            if engine == "trtllm" and hw.startswith("MI"):
                continue
            variant = f"{tp}gpu" + (f"-v{round_}" if round_ else "")
            speed = 0.5 + int(_hash(model, workload, hw, engine, tp, round_), 16) % 1500 / 1000
            yield SynthJob(model=model, hardware=hw, engine=engine, tp=tp, variant=variant,
                           workload=workload, speed=speed)


def matrix_jobs(n: int, levels: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128)) -> list[SynthJob]:
    """``n`` distinct jobs over models × workloads × hardware × engines, each with ``levels``."""
    return [SynthJob(**{**asdict(j), "concurrency": tuple(levels)})
            for j in itertools.islice(_combos(), n)]


# ---------------------------------------------------------------- capacity and eval documents

CAPACITY_TIERS = (("SLO20", 20.0, 10.0), ("SLO60", 60.0, 3.0))  # name, P25 tok/s, P95 TTFT s


def capacity_document(job: SynthJob, run_id: str, levels: Sequence[int] = (8, 16, 32, 64)
                      ) -> dict[str, Any]:
    """A capacity search's document (``results.agentic`` reads it) for ``job``: each tier passes
    up to a level that grows with the job's speed."""
    from infermatrix.results.agentic import SCHEMA

    gpus = job.gpus["total"]
    usd = PRICES.get(job.hardware, 4.0) * gpus
    rows, tiers = [], []
    for conc in levels:
        speed = 120.0 * job.speed / (1 + conc / 16)
        ttft = 0.4 + conc / (20.0 * job.speed)
        rows.append({"concurrency": conc, "completed": 4 * conc, "error_rate": 0.0,
                     "p25_output_speed": speed, "p95_ttft_ms": ttft * 1000,
                     "cached_token_ratio": 0.8, "avg_power_w": None,
                     "tiers": {name: {"passed": speed >= s and ttft <= t,
                                      "reason": "" if speed >= s and ttft <= t else "too slow"}
                               for name, s, t in CAPACITY_TIERS}})
    for name, s, t in CAPACITY_TIERS:
        passed = [r["concurrency"] for r in rows if r["tiers"][name]["passed"]]
        failing = [r["concurrency"] for r in rows if not r["tiers"][name]["passed"]]
        agents = max(passed, default=0)
        tiers.append({"tier": {"name": name, "min_output_speed": s, "max_ttft_s": t},
                      "passing_concurrency": agents, "first_failing": min(failing, default=None),
                      "bounded": bool(failing), "gpus": gpus, "agents_per_gpu": agents / gpus,
                      "usd_per_hour": usd, "agents_per_usd_hour": agents / usd})
    return {"schema": SCHEMA, "source": "synthetic", "tiers": tiers, "levels": rows,
            "infermatrix": {"run_id": run_id, "recipe": job.recipe, "model": job.model,
                            "hardware": job.hardware, "engine": job.engine,
                            "precision": job.precision, "mode": job.mode,
                            "workload": "agentic-coding", "simulated": job.simulated,
                            "launcher": "synthetic", "time_scale": 1.0}}


def write_capacity(run_dir: Path, job: SynthJob) -> Path:
    """A capacity job's folder with its ``capacity.json``."""
    path = Path(run_dir) / "jobs" / f"{job.job_id}.capacity" / "capacity.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(capacity_document(job, Path(run_dir).name)), encoding="utf-8")
    return path


def write_eval(run_dir: Path, job: SynthJob, score: float = 0.95) -> Path:
    """An eval file (gsm8k after the job's largest level) in the job's folder."""
    from infermatrix.evals.record import EvalRecord, document, file_name

    block = level_result(job, Path(run_dir).name, job.concurrency[-1])["infermatrix"]
    rec = EvalRecord.model_validate({
        **{k: block[k] for k in ("run_id", "job_id", "fingerprint", "recipe", "model", "hardware",
                                 "engine", "engine_version", "image", "precision", "workload",
                                 "runner", "simulated")},
        "concurrency": job.concurrency[-1], "task": "gsm8k", "lm_eval_task": "gsm8k",
        "metric": "exact_match,flexible-extract", "status": "ok", "score": score,
        "stderr": 0.006, "n_samples": 1319, "started_at": block["finished_at"],
        "finished_at": block["finished_at"]})
    path = Path(run_dir) / "jobs" / job.job_id / file_name(rec.task, rec.concurrency)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document(rec, None)), encoding="utf-8")
    return path
