"""What the loop (loop.py), its strategies and its executors share: one job under way
(``Run``) and the two roles (``Executor``, ``Strategy``), apart from the loop so strategies.py
and executors.py can name them without importing the loop that imports them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..catalog.loader import Catalog
from ..plan.jobs import Job

if TYPE_CHECKING:
    from ..evals.step import EvalServer
    from .backends.base import Handle

Log = Callable[[str], None]


@dataclass
class Run:
    """One job under way: what a strategy and an executor share."""

    cat: Catalog
    job: Job
    job_dir: Path
    manifest: dict[str, Any]
    log: Log
    on_level_failure: str = "continue"
    block: dict[str, Any] | None = None  # every result's identity block, once launched

    @property
    def run_id(self) -> str:
        return str(self.manifest["run_id"])


class Executor(Protocol):
    """Where a job's levels run: a launched server, or virtual time."""

    launcher: str
    simulated: bool

    def start(self, run: Run) -> None:
        """Launch and prove it serves (virtual time: nothing to start)."""

    def stop(self) -> None:
        """Tear down what ``start`` made; safe to call after a failed start."""

    def between(self, run: Run, flush: bool, timeout_s: float = 120.0) -> dict[str, Any]:
        """Before a level: drain (and flush the prefix cache); what was done."""

    def level(self, run: Run, conc: int) -> dict[str, Any]:
        """One throughput level: the client's result dict."""

    def energy(self, t0: float, t1: float, result: dict[str, Any]) -> dict[str, Any]:
        """The level's energy figures for its identity block ({} when not sampled)."""

    def died(self) -> Handle | None:
        """The process of the deployment that exited (it can serve no more), or None."""

    def eval_target(self, run: Run) -> EvalServer | str:
        """Where the job's evals send requests, or why they cannot run here."""

    def search(self, run: Run) -> dict[str, Any]:
        """The job's capacity search (each level through ``between``): its document."""


Strategy = Callable[[Run, Executor], None]
