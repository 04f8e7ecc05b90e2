"""Start the server(s) a job needs on this machine and say where their front door is.

Only the simulated engine is started here so far; docker, SLURM and real engines plug in as
further backends with the same ``Deployment`` result.
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.loader import Catalog
from .process import ManagedProcess
from .readiness import Canary


@dataclass
class Deployment:
    procs: list[ManagedProcess]
    base_url: str
    health_urls: list[str]
    served_model: str
    canary: Canary
    simulated: bool
    log_paths: list[Path] = field(default_factory=list)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()

    def dead(self) -> ManagedProcess | None:
        return next((p for p in self.procs if p.exit_code() is not None), None)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_model_name(cat: Catalog, recipe_id: str) -> str:
    recipe = cat.recipes[recipe_id]
    return recipe.checkpoint or cat.models[recipe.model].hf_id


def start_sim(cat: Catalog, recipe_id: str, log_dir: Path, extra_args: list[str] | None = None) -> Deployment:
    """The simulated engine modelling ``recipe_id``'s hardware, model and topology."""
    port = free_port()
    name = served_model_name(cat, recipe_id)
    argv = [sys.executable, "-m", "infermatrix.sim", "serve", "--recipe", recipe_id,
            "--catalog-root", str(cat.root), "--host", "127.0.0.1", "--port", str(port),
            "--served-model-name", name, *(extra_args or [])]
    log = log_dir / "server-sim.log"
    proc = ManagedProcess("simulated engine", argv, log)
    base = f"http://127.0.0.1:{port}"
    canary = Canary("/v1/completions", {"model": name, "prompt": "Hello", "max_tokens": 4})
    return Deployment([proc], base, [f"{base}/health"], name, canary, simulated=True,
                      log_paths=[log])
