"""Running `infermatrix run` in-process, as a person or job.yml would type it."""

from __future__ import annotations

from pathlib import Path

from infermatrix.cli import main


def run(root: Path, out: Path, run_id: str, recipe: str, runner: str, conc: list[int],
        *extra: str, workload: str = "smoke-1k-128") -> int:
    return main(["run", "--root", str(root), "--output-dir", str(out), "--run-id", run_id,
                 "--recipe", recipe, "--workload", workload, "--runner-label", runner,
                 "--concurrency", *map(str, conc), *extra])
