"""Where a number came from: code revision, machine, time."""

from __future__ import annotations

import os
import platform
import secrets
import subprocess
from datetime import UTC, datetime
from pathlib import Path


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def git_sha(repo: Path) -> str | None:
    if os.environ.get("GITHUB_SHA"):
        return os.environ["GITHUB_SHA"]
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def host_facts() -> dict[str, str]:
    return {"host": platform.node(), "platform": platform.platform(),
            "python": platform.python_version(),
            "runner_name": os.environ.get("RUNNER_NAME", "")}
