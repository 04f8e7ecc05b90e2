"""Capacity jobs: an agentic workload's capacity search as the measurement of a job.

capacity/ sits above launch/ (it may import it, not the other way round): the CLI layer hands
this module to ``launch.cli.execute`` as ``args.capacity_jobs`` (``commands/run.py``,
``commands/sweep.py``), which calls ``measure_capacity`` or ``run_virtual_capacity_job``.

Against a server (real engine through any backend, or the simulated engine in real time) the
search runs inside the one job lifecycle of ``launch/job.py`` — launch, readiness, GPU power
sampling, drain between levels, teardown, manifest — as ``measure_capacity``. In virtual time
(``--virtual``) no server starts: ``capacity.virtual`` plays the levels on the simulator. Either
way the capacity document (schema ``infermatrix-agentic-capacity``) is written to the job folder
as ``capacity.json``, where collect finds it, and the manifest lists the searched levels.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..catalog.loader import Catalog
from ..jsonio import write_json_atomic
from ..launch.job import JobOutcome, Serving
from ..launch.jobs_progress import CAPACITY_FILE  # launch/ counts it as a job's progress
from ..launch.provenance import git_sha
from ..plan.jobs import Job


def _identity(cat: Catalog, job: Job, run_id: str, launcher: str, simulated: bool) -> dict[str, Any]:
    from .recipe import identity

    return identity(cat, job.recipe, job.workload, simulated=simulated, launcher=launcher,
                    run_id=run_id, job_id=job.id, fingerprint=job.fingerprint,
                    runner=job.runner, git_sha=git_sha(cat.root))


def _record(job_dir: Path, manifest: dict[str, Any], doc: dict[str, Any],
            log: Callable[[str], None]) -> None:
    """Write the document; list its searched levels and its tiers in the manifest. A level
    past the capacity fails its tiers by design: it is measured (ok), and judged in the file."""
    write_json_atomic(job_dir / CAPACITY_FILE, doc)
    manifest["levels"] = []  # one search is one measurement: a resumed job searches afresh
    for lv in doc["levels"]:
        manifest["levels"].append({"concurrency": lv["concurrency"], "status": "ok",
                                   "file": CAPACITY_FILE, "error": None,
                                   "error_rate": lv.get("error_rate")})
    manifest["capacity"] = {"file": CAPACITY_FILE, "tiers": {
        t["tier"]["name"]: {"agents": t["passing_concurrency"], "bounded": t["bounded"]}
        for t in doc["tiers"]}}
    write_json_atomic(job_dir / "manifest.json", manifest)
    for t in doc["tiers"]:
        log(f"  {t['tier']['name']}: {t['passing_concurrency']} agents"
            f"{'' if t['bounded'] else ' (not bounded)'} over {t['gpus']} GPUs")


def measure_capacity(sv: Serving) -> None:
    """The job's capacity search against its serving deployment (``run_job``'s measurement)."""
    from ..client import BenchConfig
    from ..client.tokenizer import load_tokenizer
    from .recipe import affinity_of, deployment_of
    from .run import Target, find_capacity_sync, settings_of
    from .sources import source_of
    from .tiers import tiers_from

    job, cat, dep = sv.job, sv.cat, sv.deployment
    m = job.capacity
    assert m is not None
    wl = cat.workloads[job.workload]
    cfg = BenchConfig(backend="openai-chat" if wl.endpoint == "chat" else "openai",
                      base_url=dep.base_url, model=dep.served_model, tokenizer=dep.tokenizer,
                      ignore_eos=True, disable_tqdm=True)
    monitor = sv.monitor
    power = (lambda t0, t1: monitor.energy(t0, t1)[1]) if monitor is not None else None
    target = Target(cfg, engine=dep.engine, worker_urls=list(dep.worker_urls),
                    affinity=affinity_of(cat, job.recipe), power=power)
    source = source_of(m.sessions, cat.root, load_tokenizer(dep.tokenizer))
    doc = find_capacity_sync(
        target, source, tiers_from(t.model_dump() for t in m.tiers),
        deployment_of(cat, job.recipe), settings_of(m), log=sv.log,
        meta=_identity(cat, job, sv.manifest["run_id"], sv.manifest["launcher"],
                       bool(sv.block.get("simulated"))))
    doc["sessions"] = m.sessions.model_dump(mode="json")
    _record(sv.job_dir, sv.manifest, doc, sv.log)


def search_in_virtual_time(cat: Catalog, job: Job, run_id: str,
                           log: Callable[[str], None] | None = None
                           ) -> tuple[dict[str, Any], list[str]]:
    """``job``'s capacity search in virtual time: its document, and the lines it logged unless
    ``log`` took them as they came. A pure function of the catalog, the job and the run id, so
    a sweep runs it ahead in a worker (``launch.virtual_pool``)."""
    from ..launch.virtual import LAUNCHER
    from .virtual import virtual_capacity

    lines: list[str] = []
    doc = virtual_capacity(cat, job.recipe, job.workload, measurement=job.capacity,
                           log=log or lines.append, meta=_identity(cat, job, run_id, LAUNCHER, True))
    return doc, lines


def run_virtual_capacity_job(cat: Catalog, job: Job, out_dir: Path, run_id: str,
                             log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
                             *, searched: tuple[dict[str, Any], list[str]] | None = None
                             ) -> JobOutcome:
    """The job's capacity search in virtual time (no server), recorded as any job is.
    ``searched``: what ``search_in_virtual_time`` gave for it already (a sweep's worker)."""
    from ..launch.virtual import run_in_virtual_time

    def search(job_dir: Path, manifest: dict[str, Any]) -> None:
        doc, lines = searched or search_in_virtual_time(cat, job, run_id, log)
        for line in lines:
            log(line)
        _record(job_dir, manifest, doc, log)

    return run_in_virtual_time(job, out_dir, run_id, search)
