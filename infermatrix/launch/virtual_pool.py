"""Virtual levels and capacity searches measured ahead, in worker processes, while the sweep
records them in order.

A level in virtual time is a pure function of the catalog, the job and the concurrency (the
drawn lengths and the engine are seeded), and so is a capacity search of a job, so both can be
simulated on every core. The searches are handed out first, after one level per worker (a
first measured rate for the sweep's ETA): each is one long task (many levels in turn), so
started first they end with the levels instead of after them. Only the measuring moves: the sweep's loop still asks for each level in its own order
and records it (manifests, the ledger, resume and signal handling stay in the main process),
and gets exactly the result measuring it there would have given. Workers are forked (they
share the loaded catalog), ignore Ctrl-C (the main process stops them) and are terminated
when the sweep ends, however it ends; a level nobody asks for is never waited for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from multiprocessing.pool import AsyncResult
from typing import Any

from ..catalog.loader import Catalog
from ..plan.jobs import Job
from ..workers import fork_pool

_catalog: Catalog | None = None  # a worker's catalog, inherited from the sweep at the fork


def _init_worker(cat: Catalog) -> None:
    global _catalog
    _catalog = cat


def _measure(job: Job, conc: int) -> dict[str, Any]:
    from .virtual import measure_level

    assert _catalog is not None
    return measure_level(_catalog, job, conc)


def _search(search: Callable[[Catalog, Job], Any], job: Job) -> Any:
    assert _catalog is not None
    return search(_catalog, job)


class LevelPool:
    """Measures every level of ``jobs`` (in their order) in ``workers`` processes, and, given
    ``search`` (a module-level function: workers receive it by name), runs ``search(cat, job)``
    for each job of ``searches``, whose result ``searched(job)`` returns."""

    def __init__(self, cat: Catalog, jobs: Iterable[Job], workers: int, *,
                 searches: Iterable[Job] = (), search: Callable[[Catalog, Job], Any] | None = None,
                 on_done: Callable[[Any], None] | None = None):
        # forked: the catalog is shared, not pickled; the sweep's signal handlers are not.
        # on_done(result) is called (in the pool's result thread) as each task ends: progress
        self._pool = fork_pool(workers, _init_worker, (cat,))
        levels = [(job, conc) for job in jobs for conc in job.concurrency]
        # one short level per worker before the long searches: the sweep's progress has a
        # measured rate (an ETA) within seconds, and the searches still start almost first
        head = levels[:workers] if search is not None else []
        self._pending: dict[tuple[str, int], AsyncResult[dict[str, Any]]] | None = {
            (job.id, conc): self._pool.apply_async(_measure, (job, conc), callback=on_done)
            for job, conc in head}
        self._searches: dict[str, AsyncResult[Any]] = {
            job.id: self._pool.apply_async(_search, (search, job), callback=on_done)
            for job in searches} if search is not None else {}
        self._pending.update({
            (job.id, conc): self._pool.apply_async(_measure, (job, conc), callback=on_done)
            for job, conc in levels[len(head):]})

    def searched(self, job: Job) -> Any | None:
        """The result of ``job``'s search, waited for; None if the pool was not given it (or
        is closed)."""
        pending = self._searches.pop(job.id, None) if self._pending is not None else None
        return None if pending is None else pending.get()

    def measure(self, cat: Catalog, job: Job, conc: int) -> dict[str, Any]:
        """The level's result: from the workers if they were given it, else measured here."""
        pending = self._pending.pop((job.id, conc), None) if self._pending is not None else None
        if pending is None:
            from .virtual import measure_level

            return measure_level(cat, job, conc)
        return pending.get()  # a worker's exception is raised here, as measuring here would

    def close(self) -> None:
        """Stop the workers (at once: what is left is not needed). Closing again does nothing."""
        if self._pending is not None:
            self._pending = None
            self._pool.terminate()
            self._pool.join()

    def __enter__(self) -> LevelPool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
