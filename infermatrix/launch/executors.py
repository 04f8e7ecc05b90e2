"""Where the loop's levels run (``loop.Executor``): a launched server, or virtual time.

``Served`` starts a deployment through a starter (a backend's, for a real engine, or
``deploy.start_sim``, the simulated engine in real time), proves it serves (health and a canary
through the front door), samples GPU power, drains and flushes between levels, and tears down
what it started. ``Virtual`` starts nothing: each level is played by the simulator's
discrete-event kernel on a fresh deployment, so there is nothing to drain, no power to sample
and no server an evaluation could query.

Both bind ``${CONC}`` through ``plan.jobs.conc_params``: ``Served`` for what it launches the
server for (a job's one level, a capacity search's bound), ``Virtual`` for each level it
simulates.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..catalog.loader import Catalog
from ..jsonio import write_json_atomic
from ..plan.jobs import Job, conc_params
from .backends.base import Handle, Launched
from .drain import settle
from .job import READY_TIMEOUT_S, energy, run_level, start_monitor
from .monitor import GpuMonitor
from .provenance import git_sha
from .readiness import wait_ready
from .virtual import LAUNCHER as VIRTUAL
from .virtual import measure_level

if TYPE_CHECKING:
    from ..evals.step import EvalServer
    from ..progress import Progress
    from .run import Run

NO_SERVER = "virtual time: no server runs, so no evaluation can query one"


class Starter(Protocol):
    """Start the job's deployment, its logs in ``job_dir``; ``params`` bind placeholders."""

    def __call__(self, job_dir: Path, *, params: dict[str, str]) -> Launched: ...


def capacity_identity(cat: Catalog, job: Job, run_id: str, launcher: str,
                      simulated: bool) -> dict[str, Any]:
    """A capacity document's ``infermatrix`` block: what was searched, by which job."""
    from ..capacity.recipe import identity

    return identity(cat, job.recipe, job.workload, simulated=simulated, launcher=launcher,
                    run_id=run_id, job_id=job.id, fingerprint=job.fingerprint,
                    runner=job.runner, git_sha=git_sha(cat.root))


class Served:
    """A deployment started for the job and proven to serve."""

    def __init__(self, start: Starter, launcher: str, ready_timeout_s: float = READY_TIMEOUT_S,
                 time_scale: float = 1.0, progress: Progress | None = None) -> None:
        self._start, self.launcher, self.ready_timeout_s = start, launcher, ready_timeout_s
        self.time_scale = time_scale  # a simulated engine run N× faster (capacity searches)
        self.progress = progress  # a capacity search's levels, with an ETA (capacity/eta.py)
        self.simulated = False
        self.deployment: Launched | None = None
        self.monitor: GpuMonitor | None = None

    @property
    def up(self) -> Launched:
        assert self.deployment is not None, "the deployment is not started"
        return self.deployment

    def start(self, run: Run) -> None:
        manifest = run.manifest
        dep = self.deployment = self._start(run.job_dir, params=conc_params(run.job))
        self.simulated = dep.simulated
        manifest["server_logs"] = [p.name for p in dep.log_paths]
        manifest["commands"] = dep.commands
        write_json_atomic(run.job_dir / "manifest.json", manifest)
        self.monitor = start_monitor(run.cat, run.job, dep, run.job_dir, manifest)
        ready_s = wait_ready(dep.health_urls, dep.base_url, dep.canary, dep.procs,
                             self.ready_timeout_s)
        manifest["ready_s"] = round(ready_s, 2)
        write_json_atomic(run.job_dir / "manifest.json", manifest)
        run.log(f"  server ready in {ready_s:.1f} s at {dep.base_url}")

    def stop(self) -> None:
        if self.monitor is not None:
            self.monitor.stop()
        if self.deployment is not None:
            self.deployment.stop()

    def between(self, run: Run, flush: bool, timeout_s: float = 120.0) -> dict[str, Any]:
        dep = self.up
        return settle(dep.worker_urls or [dep.base_url], timeout_s, dep.engine if flush else None)

    def level(self, run: Run, conc: int) -> dict[str, Any]:
        return run_level(run.cat, run.job, self.up, conc)

    def energy(self, t0: float, t1: float, result: dict[str, Any]) -> dict[str, Any]:
        return energy(self.monitor, t0, t1, result)

    def died(self) -> Handle | None:
        return self.up.dead()

    def eval_target(self, run: Run) -> EvalServer | str:
        from ..evals.step import EvalServer

        dep = self.up
        return EvalServer(dep.base_url, dep.served_model, run.cat.workloads[run.job.workload].endpoint)

    def search(self, run: Run) -> dict[str, Any]:
        """The capacity search against the deployment: the client's closed-loop agents."""
        from ..capacity.recipe import affinity_of, footprint_of
        from ..capacity.run import Target, find_capacity_sync, settings_of
        from ..capacity.sources import source_of
        from ..capacity.tiers import tiers_from
        from ..client import BenchConfig
        from ..client.backends import backend_for
        from ..client.tokenizer import load_tokenizer

        cat, job, dep = run.cat, run.job, self.up
        m = job.capacity
        assert m is not None
        wl = cat.workloads[job.workload]
        s = settings_of(m, self.time_scale)
        cfg = BenchConfig(backend=backend_for(wl.endpoint),
                          base_url=dep.base_url, model=dep.served_model, tokenizer=dep.tokenizer,
                          ignore_eos=True, disable_tqdm=True)
        monitor = self.monitor
        power = (lambda t0, t1: monitor.energy(t0, t1)[1]) if monitor is not None else None
        target = Target(cfg, affinity=affinity_of(cat, job.recipe), power=power,
                        between=lambda: self.between(run, s.flush_cache, s.drain_timeout_s))
        tiers = tiers_from(t.model_dump() for t in m.tiers)
        doc = find_capacity_sync(
            target, source_of(m.sessions, cat.root, load_tokenizer(dep.tokenizer)),
            [t.scaled(self.time_scale) for t in tiers], footprint_of(cat, job.recipe), s,
            log=run.log, progress=self.progress, meta=capacity_identity(cat, job, run.run_id, self.launcher,
                                                self.simulated))
        if self.time_scale != 1.0:  # the tiers as asked, not in wall-clock units
            doc["infermatrix"]["time_scale"] = self.time_scale
            for entry, tier in zip(doc["tiers"], tiers, strict=True):
                entry["tier"] = tier.model_dump()
        return doc


def search_in_virtual_time(cat: Catalog, job: Job, run_id: str,
                           log: Callable[[str], None] | None = None
                           ) -> tuple[dict[str, Any], list[str]]:
    """``job``'s capacity search in virtual time: its document, and the lines it logged unless
    ``log`` took them as they came. A pure function of the catalog, the job and the run id, so
    a sweep runs it ahead in a worker (``virtual_pool``)."""
    from ..capacity.virtual import virtual_capacity

    lines: list[str] = []
    doc = virtual_capacity(cat, job.recipe, job.workload, measurement=job.capacity,
                           log=log or lines.append,
                           meta=capacity_identity(cat, job, run_id, VIRTUAL, True))
    return doc, lines


class Virtual:
    """The simulator's virtual time: no server, the same result files."""

    launcher = VIRTUAL
    simulated = True

    def __init__(self, pool: Any | None = None) -> None:
        self.pool = pool  # a sweep's LevelPool: levels and searches measured ahead in workers

    def start(self, run: Run) -> None:
        return None

    def stop(self) -> None:
        return None

    def between(self, run: Run, flush: bool, timeout_s: float = 120.0) -> dict[str, Any]:
        return {}  # every simulated level starts on a fresh deployment

    def level(self, run: Run, conc: int) -> dict[str, Any]:
        if self.pool is not None:
            return self.pool.measure(run.cat, run.job, conc)
        return measure_level(run.cat, run.job, conc)

    def energy(self, t0: float, t1: float, result: dict[str, Any]) -> dict[str, Any]:
        return {}  # never estimated: power is measured or absent

    def died(self) -> Handle | None:
        return None

    def eval_target(self, run: Run) -> EvalServer | str:
        return NO_SERVER

    def search(self, run: Run) -> dict[str, Any]:
        searched = self.pool.searched(run.job) if self.pool is not None else None
        doc, lines = searched or search_in_virtual_time(run.cat, run.job, run.run_id, run.log)
        for line in lines:
            run.log(line)
        return doc
