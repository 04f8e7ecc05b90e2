"""Run one job: start its server once, prove it serves, sweep every concurrency level, tear down.

Every level's raw result and the job manifest are written as soon as they exist, so a crash
loses nothing already measured.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..catalog.loader import Catalog
from ..jsonio import write_json_atomic
from ..plan.jobs import Job
from .deploy import Deployment
from .provenance import git_sha, host_facts, utc_now
from .readiness import NotReady, wait_ready

SCHEMA_VERSION = 1
READY_TIMEOUT_S = 600.0


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
        "energy_j": None, "avg_power_w": None,
    }


def _bench_config(cat: Catalog, job: Job, deployment: Deployment, conc: int) -> Any:
    from ..client import BenchConfig  # the client is an independent package; import late

    wl = cat.workloads[job.workload]
    return BenchConfig(
        backend="openai-chat" if wl.endpoint == "chat" else "vllm",
        base_url=deployment.base_url, model=deployment.served_model,
        dataset_name="random", random_input_len=wl.isl, random_output_len=wl.osl,
        random_range_ratio=wl.range_ratio, num_prompts=wl.num_prompts(conc),
        num_warmups=wl.num_warmups(conc), max_concurrency=conc, ignore_eos=wl.ignore_eos,
        max_error_rate=wl.max_error_rate, seed=conc, disable_tqdm=True,
        percentile_metrics=["ttft", "tpot", "itl", "e2el"], metric_percentiles=[50, 90, 99],
    )


def _run_level(cat: Catalog, job: Job, deployment: Deployment, conc: int) -> dict[str, Any]:
    from ..client import run_benchmark

    return asyncio.run(run_benchmark(_bench_config(cat, job, deployment, conc)))


def _error_rate(result: dict[str, Any]) -> float:
    done = result.get("completed", 0) + result.get("failed", 0)
    return result.get("failed", 0) / done if done else 1.0


def run_job(cat: Catalog, job: Job, out_dir: Path, run_id: str,
            start: Callable[[Path], Deployment], launcher: str,
            log: Callable[[str], None] = lambda m: print(m, file=sys.stderr)) -> JobOutcome:
    job_dir = out_dir / "jobs" / job.id
    job_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "kind": "job-manifest", "run_id": run_id,
        "job": job.model_dump(), "status": "running", "error": None, "levels": [],
        "started_at": utc_now(), "finished_at": None, "provenance": host_facts(),
    }
    write_json_atomic(job_dir / "manifest.json", manifest)
    wl = cat.workloads[job.workload]
    deployment: Deployment | None = None
    try:
        deployment = start(job_dir)
        block = identity_block(cat, job, run_id, launcher, deployment.simulated, git_sha(cat.root))
        manifest["server_logs"] = [p.name for p in deployment.log_paths]
        ready_s = wait_ready(deployment.health_urls, deployment.base_url, deployment.canary,
                             deployment.procs, READY_TIMEOUT_S)
        log(f"  server ready in {ready_s:.1f} s at {deployment.base_url}")
        for conc in job.concurrency:
            started = utc_now()
            t0 = time.perf_counter()
            result = _run_level(cat, job, deployment, conc)
            rate = _error_rate(result)
            ok = rate <= wl.max_error_rate
            error = None if ok else f"error rate {rate:.1%} exceeds {wl.max_error_rate:.0%}"
            dead = deployment.dead()
            if dead is not None:
                ok, error = False, f"{dead.name} exited with code {dead.exit_code()} during the level"
            result["infermatrix"] = {**block, "concurrency": conc, "started_at": started,
                                     "finished_at": utc_now(), "status": "ok" if ok else "failed",
                                     "error": error}
            name = f"conc-{conc}.json"
            write_json_atomic(job_dir / name, result)
            manifest["levels"].append({"concurrency": conc, "status": result["infermatrix"]["status"],
                                       "file": name, "error": error})
            write_json_atomic(job_dir / "manifest.json", manifest)
            log(f"  c={conc:<4} {result.get('completed', 0)} ok / {result.get('failed', 0)} failed, "
                f"{result.get('output_throughput', 0):.0f} tok/s out, median TPOT "
                f"{result.get('median_tpot_ms') or 0:.1f} ms ({time.perf_counter() - t0:.1f} s)")
            if dead is not None:
                raise NotReady(f"{dead.name} exited with code {dead.exit_code()}; "
                               f"log tail:\n{dead.tail()}")
        statuses = {lv["status"] for lv in manifest["levels"]}
        manifest["status"] = "ok" if statuses == {"ok"} else "partial" if "ok" in statuses else "failed"
    except NotReady as exc:
        manifest["status"], manifest["error"] = "failed", str(exc)
    except Exception as exc:  # recorded, never lost: the manifest says what broke
        manifest["status"], manifest["error"] = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        if deployment is not None:
            deployment.stop()
        done = {lv["concurrency"] for lv in manifest["levels"]}
        manifest["levels"].extend({"concurrency": c, "status": "skipped", "file": None, "error": None}
                                  for c in job.concurrency if c not in done)
        manifest["finished_at"] = utc_now()
        write_json_atomic(job_dir / "manifest.json", manifest)
    return JobOutcome(job_dir, manifest["status"], manifest["error"], manifest["levels"])
