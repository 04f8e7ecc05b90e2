"""The pieces of a job's lifecycle (``loop.run_measurement`` puts them together): its manifest,
the identity block of its results, one throughput level through the client, its record.

Every level's raw result and the job manifest are written as soon as they exist, so a crash
loses nothing already measured.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..catalog.loader import Catalog
from ..catalog.safety import UnsafeValue, safe_id
from ..errors import UsageError
from ..jsonio import write_json_atomic
from ..plan.jobs import Job
from ..workers import STOP_SIGNALS
from .backends.base import Launched
from .monitor import GpuMonitor
from .provenance import host_facts, utc_now
from .state import closing, file_digest, opening

SCHEMA_VERSION = 1
READY_TIMEOUT_S = 600.0
POLICIES = ("continue", "stop")  # what a level that fails its error-rate threshold does


class Interrupted(Exception):
    """A signal asked the job to stop (SIGTERM from the runner, a cancelled workflow)."""


class LevelFailed(Exception):
    pass


@dataclass
class JobOutcome:
    job_dir: Path
    status: str  # ok | partial | failed
    error: str | None
    levels: list[dict[str, Any]]


def identity_block(cat: Catalog, job: Job, run_id: str, launcher: str, simulated: bool,
                   repo_sha: str | None) -> dict[str, Any]:
    """What a result is about; ``results`` reads only this, never the catalog or the runner."""
    recipe = cat.recipes[job.recipe]
    wl = cat.workloads[job.workload]
    hw = cat.hardware[recipe.hardware]
    topo = recipe.topology
    return {
        "schema_version": SCHEMA_VERSION, "kind": "level-result", "run_id": run_id,
        "job_id": job.id, "fingerprint": job.fingerprint, "recipe": job.recipe,
        "model": recipe.model, "hardware": recipe.hardware, "engine": recipe.engine.name,
        "engine_version": recipe.engine.version, "image": recipe.engine.image,
        "precision": recipe.precision, "mode": topo.mode,
        "gpus": {"total": topo.gpus(), "prefill": topo.gpus("prefill"), "decode": topo.gpus("decode")},
        "pools": [{"role": p.role, "instances": p.instances, **p.parallel.model_dump()}
                  for p in topo.pools],
        "workload": job.workload, "isl": wl.isl, "osl": wl.osl, "runner": job.runner,
        "launcher": launcher, "simulated": simulated, "git_sha": repo_sha,
        "client_version": __version__, "usd_per_gpu_hour": hw.usd_per_gpu_hour,
        "energy_j": None, "avg_power_w": None, "joules_per_output_token": None,
    }


def bench_config(cat: Catalog, job: Job, conc: int, base_url: str | None = None,
                 model: str | None = None, tokenizer: str | None = None) -> Any:
    """The client settings of one level: the workload's shape at concurrency ``conc``. The
    served model is often no tokenizer name: its local tokenizer, else words."""
    from .bench_commands import workload_config  # loads the client: only when measuring

    return workload_config(cat.workloads[job.workload], conc, base_url, model,
                           tokenizer or "words")


def run_level(cat: Catalog, job: Job, deployment: Launched, conc: int) -> dict[str, Any]:
    config = bench_config(cat, job, conc, deployment.base_url, deployment.served_model,
                          deployment.tokenizer)
    return asyncio.run(_interruptible(config))


async def _interruptible(config: Any) -> dict[str, Any]:
    """The client's run, cancelled at once by SIGTERM/SIGHUP (a Python-level handler would
    only run between the event loop's callbacks, and the client absorbs errors per request)."""
    from ..client import run_benchmark

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    caught: list[int] = []
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def on_signal(sig: int) -> None:
        caught.append(sig)
        if task is not None:
            task.cancel()

    installed = []
    for sig in STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
        except (RuntimeError, ValueError, NotImplementedError):  # not the main thread
            break
    try:
        return await run_benchmark(config)
    except asyncio.CancelledError:
        if caught:
            raise Interrupted(signal.Signals(caught[0]).name) from None
        raise
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
            signal.signal(sig, previous[sig])  # remove_signal_handler leaves SIG_DFL behind


def error_rate_problem(result: dict[str, Any], max_error_rate: float) -> str | None:
    """Why a level failed its error-rate threshold, or None when it passed."""
    done = result.get("completed", 0) + result.get("failed", 0)
    rate = result.get("failed", 0) / done if done else 1.0
    return None if rate <= max_error_rate else f"error rate {rate:.1%} exceeds {max_error_rate:.0%}"


def energy(monitor: GpuMonitor | None, t0: float, t1: float, result: dict[str, Any]) -> dict[str, Any]:
    if monitor is None:
        return {}
    joules, watts = monitor.energy(t0, t1)
    tokens = result.get("total_output_tokens") or 0
    return {"energy_j": joules, "avg_power_w": watts,
            "joules_per_output_token": joules / tokens if joules is not None and tokens else None}


def start_monitor(cat: Catalog, job: Job, deployment: Launched, job_dir: Path,
                   manifest: dict[str, Any]) -> GpuMonitor | None:
    if deployment.monitor_prefix is None:
        manifest["gpu_metrics"] = None
        return None
    vendor = cat.hardware[cat.recipes[job.recipe].hardware].vendor
    monitor = GpuMonitor(vendor, job_dir / "gpu-metrics.csv", deployment.monitor_prefix).start()
    manifest["gpu_metrics"] = {"file": "gpu-metrics.csv", "error": monitor.error}
    return monitor if monitor.error is None else None


def make_folder(path: Path) -> Path:
    """``mkdir -p``; a folder that cannot be made (--output-dir under a file) is a usage error."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{path}: cannot create the folder: {exc.strerror or exc}") from None
    return path


def start_manifest(job: Job, out_dir: Path, run_id: str, launcher: str) -> tuple[Path, dict[str, Any]]:
    """Create the job's folder and its manifest (written at once: a crash still leaves it)."""
    try:  # both name folders: never a path that climbs out of the run folder
        safe_id(run_id, "run id")
        safe_id(job.id, "job id")
    except UnsafeValue as exc:
        raise UsageError(str(exc)) from None
    job_dir = make_folder(out_dir / "jobs" / job.id)
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "kind": "job-manifest", "run_id": run_id,
        "job": job.model_dump(), "status": "running", "error": None, "levels": [],
        "started_at": utc_now(), "finished_at": None, "provenance": host_facts(),
        "launcher": launcher, **opening(job_dir),  # state, owner; a resumed job's kept levels
    }
    write_json_atomic(job_dir / "manifest.json", manifest)
    return job_dir, manifest


def record_level(job_dir: Path, manifest: dict[str, Any], result: dict[str, Any],
                 block: dict[str, Any], conc: int, started: str, error: str | None,
                 extra: dict[str, Any]) -> None:
    """Write one level's raw result (with its ``infermatrix`` block), then the manifest."""
    status = "failed" if error else "ok"
    result["infermatrix"] = {**block, "concurrency": conc, "started_at": started,
                             "finished_at": utc_now(), "status": status, "error": error, **extra}
    name = f"conc-{conc}.json"
    write_json_atomic(job_dir / name, result)
    manifest["levels"].append({"concurrency": conc, "status": status, "file": name,
                               "error": error, "sha256": file_digest(job_dir / name), **extra})
    write_json_atomic(job_dir / "manifest.json", manifest)


def level_line(conc: int, result: dict[str, Any], seconds: float) -> str:
    return (f"  c={conc:<4} {result.get('completed', 0)} ok / {result.get('failed', 0)} failed, "
            f"{result.get('output_throughput', 0):.0f} tok/s out, median TPOT "
            f"{result.get('median_tpot_ms') or 0:.1f} ms ({seconds:.1f} s)")


def overall_status(levels: list[dict[str, Any]]) -> str:
    statuses = {lv["status"] for lv in levels}
    return "ok" if statuses == {"ok"} else "partial" if "ok" in statuses else "failed"


def finish_manifest(job: Job, job_dir: Path, manifest: dict[str, Any]) -> None:
    """Levels never reached are listed as skipped; the manifest is closed."""
    done = {lv["concurrency"] for lv in manifest["levels"]}
    manifest["levels"].extend({"concurrency": c, "status": "skipped", "file": None, "error": None}
                              for c in job.concurrency if c not in done)
    manifest["finished_at"] = utc_now()
    manifest["state"] = closing(manifest)
    write_json_atomic(job_dir / "manifest.json", manifest)
