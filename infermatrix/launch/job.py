"""Run one job: start its server once, prove it serves, measure, tear down.

The measurement is pluggable: ``measure_levels`` (a fixed workload's concurrency levels, then
the job's evals) or ``capacity.job.measure_capacity`` (given by the CLI layer) (an agentic capacity search).

Every level's raw result and the job manifest are written as soon as they exist, so a crash
loses nothing already measured.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
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
from .drain import drain, flush_prefix_cache
from .failure import record_failure
from .monitor import GpuMonitor
from .provenance import git_sha, host_facts, utc_now
from .readiness import NotReady, wait_ready
from .state import closing, file_digest, opening, to_measure

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


def _run_level(cat: Catalog, job: Job, deployment: Launched, conc: int) -> dict[str, Any]:
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


def _between_levels(cat: Catalog, job: Job, deployment: Launched) -> dict[str, Any]:
    """Drain (nothing in flight) and, where the workload asks, flush the prefix cache."""
    urls = deployment.worker_urls or [deployment.base_url]
    steps: dict[str, Any] = {"drain": drain(urls)}
    if cat.workloads[job.workload].flush_cache_between_levels:
        steps["flush"] = flush_prefix_cache(urls, deployment.engine)
    return steps


def _energy(monitor: GpuMonitor | None, t0: float, t1: float, result: dict[str, Any]) -> dict[str, Any]:
    if monitor is None:
        return {}
    joules, watts = monitor.energy(t0, t1)
    tokens = result.get("total_output_tokens") or 0
    return {"energy_j": joules, "avg_power_w": watts,
            "joules_per_output_token": joules / tokens if joules is not None and tokens else None}


def _start_monitor(cat: Catalog, job: Job, deployment: Launched, job_dir: Path,
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


@dataclass
class Serving:
    """What a measurement gets once the job's server is proven to serve."""

    cat: Catalog
    job: Job
    deployment: Launched
    job_dir: Path
    manifest: dict[str, Any]
    block: dict[str, Any]  # the identity block of every result of this job
    monitor: GpuMonitor | None
    log: Callable[[str], None]
    on_level_failure: str = "continue"


# The pluggable step of the lifecycle: measure against the serving deployment, record results
# into the job folder and the manifest's ``levels`` (the lifecycle derives the status from them).
Measure = Callable[[Serving], None]


def measure_levels(sv: Serving) -> None:
    """A fixed workload's concurrency levels through the client, the job's evals after the
    levels they follow, against the still-warm server."""
    from ..evals.job import JobEvals  # accuracy evals the planner put in the job
    from ..evals.step import Target

    cat, job, deployment, manifest, log = sv.cat, sv.job, sv.deployment, sv.manifest, sv.log
    wl = cat.workloads[job.workload]
    evals = JobEvals.for_job(cat, job, log)
    target = Target(deployment.base_url, deployment.served_model, wl.endpoint)
    manifest["evals"] = []
    for i, conc in enumerate(to_measure(job.concurrency, manifest)):
        between = _between_levels(cat, job, deployment) if i else {}
        started = utc_now()
        t0 = time.perf_counter()
        result = _run_level(cat, job, deployment, conc)
        t1 = time.perf_counter()
        error = error_rate_problem(result, wl.max_error_rate)
        ok = error is None
        dead = deployment.dead()
        if dead is not None:
            ok, error = False, f"{dead.name} exited with code {dead.exit_code()} during the level"
        record_level(sv.job_dir, manifest, result, {**sv.block, **_energy(sv.monitor, t0, t1, result)},
                     conc, started, error, between)
        log(level_line(conc, result, t1 - t0))
        if dead is None:  # evals run against the still-warm server, after the level
            manifest["evals"] += evals.after_level(conc, target, result["infermatrix"], sv.job_dir, log)
            write_json_atomic(sv.job_dir / "manifest.json", manifest)
        if dead is not None:
            raise NotReady(f"{dead.name} exited with code {dead.exit_code()} during the "
                           f"c={conc} level; log tail:\n{dead.tail()}")
        if not ok and sv.on_level_failure == "stop":
            raise LevelFailed(f"c={conc}: {error}; stopping (--on-level-failure stop)")


def run_job(cat: Catalog, job: Job, out_dir: Path, run_id: str,
            start: Callable[[Path], Launched], launcher: str,
            log: Callable[[str], None] = lambda m: print(m, file=sys.stderr), *,
            on_level_failure: str = "continue", ready_timeout_s: float = READY_TIMEOUT_S,
            measure: Measure = measure_levels) -> JobOutcome:
    """Start, prove it serves, measure (levels, or a capacity search), tear down. The manifest
    is rewritten after every step, so whatever happens it says what was measured and what broke."""
    job_dir, manifest = start_manifest(job, out_dir, run_id, launcher)
    deployment: Launched | None = None
    monitor: GpuMonitor | None = None
    interrupted: BaseException | None = None
    try:
        deployment = start(job_dir)
        block = identity_block(cat, job, run_id, launcher, deployment.simulated, git_sha(cat.root))
        manifest["server_logs"] = [p.name for p in deployment.log_paths]
        manifest["commands"] = deployment.commands
        write_json_atomic(job_dir / "manifest.json", manifest)
        monitor = _start_monitor(cat, job, deployment, job_dir, manifest)
        ready_s = wait_ready(deployment.health_urls, deployment.base_url, deployment.canary,
                             deployment.procs, ready_timeout_s)
        manifest["ready_s"] = round(ready_s, 2)
        write_json_atomic(job_dir / "manifest.json", manifest)
        log(f"  server ready in {ready_s:.1f} s at {deployment.base_url}")
        measure(Serving(cat, job, deployment, job_dir, manifest, block, monitor, log,
                        on_level_failure))
        manifest["status"] = overall_status(manifest["levels"])
    except (NotReady, LevelFailed) as exc:
        manifest["status"], manifest["error"] = "failed", str(exc)
    except (KeyboardInterrupt, Interrupted) as exc:
        manifest["status"], manifest["error"] = "failed", f"interrupted: {exc or 'SIGINT'}"
        manifest["state"] = "interrupted"
        interrupted = exc
    except Exception as exc:  # recorded, never lost: the manifest says what broke
        manifest["status"], manifest["error"] = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        if monitor is not None:
            monitor.stop()
        if deployment is not None:
            deployment.stop()
        finish_manifest(job, job_dir, manifest)
        record_failure(job_dir, manifest, bool(deployment and deployment.simulated))
    if interrupted is not None:
        raise interrupted
    return JobOutcome(job_dir, manifest["status"], manifest["error"], manifest["levels"])
