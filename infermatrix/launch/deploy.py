"""The simulated engine as a deployment, and small helpers every backend uses.

``start_sim`` stands one simulated-engine process in for the whole topology of a recipe (it
models hardware, model, parallelism and router itself); real engines start through
``backends/`` from the commands ``engines/`` renders.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

from ..catalog.loader import Catalog
from ..engines.deployment import Canary
from .backends.base import Launched
from .process import ManagedProcess


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sim(cat: Catalog, recipe_id: str, log_dir: Path, extra_args: list[str] | None = None,
              *, params: Mapping[str, str] | None = None) -> Launched:
    """The simulated engine modelling ``recipe_id``'s hardware, model and topology; ``params``
    bind the recipe's run-time placeholders (``${CONC}``, from ``plan.jobs.conc_params``)."""
    port = free_port()
    name = cat.checkpoint(recipe_id)
    bound = [f"--param={k}={v}" for k, v in sorted((params or {}).items())]
    argv = [sys.executable, "-m", "infermatrix.sim", "serve", "--recipe", recipe_id,
            "--catalog-root", str(cat.root), "--host", "127.0.0.1", "--port", str(port),
            "--served-model-name", name, *bound,
            "--parent-pid", str(os.getpid()),  # the server ends with us, even after kill -9
            *(extra_args or [])]
    log = log_dir / "server-sim.log"
    proc = ManagedProcess("simulated engine", argv, log)
    base = f"http://127.0.0.1:{port}"
    canary = Canary("/v1/completions", {"model": name, "prompt": "Hello", "max_tokens": 4})
    return Launched([proc], base, [f"{base}/health"], name, canary, simulated=True,
                    engine="sim", worker_urls=[base], log_paths=[log], commands=[argv])
