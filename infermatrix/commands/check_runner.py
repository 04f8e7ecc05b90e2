"""`infermatrix check-runner`: is the GitHub Actions runner this step runs on new enough?

The workflows call their reusable workflows with GitHub's self-repository syntax
(`uses: $/.github/workflows/job.yml`), which needs runner 2.336.0 or newer (docs/runners.md).
GitHub gives a job no variable with its runner's version (the runner context holds name, os,
arch, temp, tool_cache, environment, debug and workspace only), so the check asks the runner:
a step runs under the runner's `Runner.Worker`, and `Runner.Listener --version` beside it
prints the version. Where that cannot be found it warns and lets the job go on."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from pathlib import Path

from ..errors import UsageError

MIN_RUNNER_VERSION = "2.336.0"  # GitHub's changelog of 2026-07-30: self-repository `uses: $/…`
WORKER_NAMES = ("Runner.Worker", "Runner.Worker.dll")
VERSION = re.compile(r"\d+\.\d+\.\d+")
MAX_ANCESTORS = 32


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--min-version", default=MIN_RUNNER_VERSION, metavar="X.Y.Z",
                        help=f"the oldest runner accepted (default {MIN_RUNNER_VERSION})")
    parser.add_argument("--runner-version", metavar="X.Y.Z",
                        help="check this version instead of asking the runner")


def _version(text: str, what: str) -> tuple[int, ...]:
    if not VERSION.fullmatch(text):
        raise UsageError(f"{what} {text!r}: not a version X.Y.Z")
    return tuple(int(part) for part in text.split("."))


def _parent(pid: int, proc: Path) -> int | None:
    try:  # /proc/PID/stat: "PID (comm) STATE PPID ...", comm may hold spaces or parentheses
        fields = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def find_worker(pid: int | None = None, proc: Path = Path("/proc")) -> Path | None:
    """The Runner.Worker executable among this process's ancestors (its argv[0], or the
    script an interpreter runs), or None."""
    current = os.getppid() if pid is None else pid
    for _ in range(MAX_ANCESTORS):
        if current is None or current <= 1:
            return None
        try:
            argv = (proc / str(current) / "cmdline").read_bytes().split(b"\0")
        except OSError:
            return None
        for word in (os.fsdecode(w) for w in argv[:2] if w):
            if Path(word).name in WORKER_NAMES and Path(word).is_absolute():
                return Path(word)
        current = _parent(current, proc)
    return None


def runner_version(worker: Path) -> str | None:
    """What `Runner.Listener --version` beside the worker prints."""
    listener = worker.with_name("Runner.Listener")
    if not listener.is_file():
        return None
    try:
        proc = subprocess.run([str(listener), "--version"], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = VERSION.search(proc.stdout)
    return found.group(0) if found else None


def main(args: argparse.Namespace) -> int:
    minimum = _version(args.min_version, "--min-version")
    version = args.runner_version
    if version is None:
        if os.environ.get("GITHUB_ACTIONS") != "true":
            print("check-runner: not on a GitHub Actions runner; nothing to check")
            return 0
        worker = find_worker()
        version = runner_version(worker) if worker else None
    if version is None:
        print(f"::warning title=runner version unknown::cannot ask this runner its version; the "
              f"workflows need runner {args.min_version} or newer (docs/runners.md)")
        return 0
    if _version(version, "runner version") < minimum:
        print(f"::error title=runner too old::runner {version}: the workflows call reusable "
              f"workflows as `uses: $/...`, which needs runner {args.min_version} or newer; "
              "update this runner (docs/runners.md)")
        return 1
    print(f"check-runner: runner {version} (needs {args.min_version} or newer): ok")
    return 0
