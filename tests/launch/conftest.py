"""Fake cluster tools on PATH (tests/fakebin), a scratch catalog, and helpers to read what the
fakes recorded and to prove nothing was left running."""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

FAKEBIN = Path(__file__).resolve().parents[1] / "fakebin"


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


@pytest.fixture
def fake_cluster(catalog_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCluster]:
    prefix = f"127.{random.randint(10, 250)}.{random.randint(0, 250)}."
    cluster = FakeCluster(root=catalog_copy, out=tmp_path / "results", log_path=tmp_path / "calls.jsonl",
                          state=tmp_path / "fake-state", prefix=prefix)
    monkeypatch.setenv("FAKEBIN_NODE_PREFIX", prefix)
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKEBIN_LOG", str(cluster.log_path))
    monkeypatch.setenv("FAKEBIN_STATE", str(cluster.state))
    monkeypatch.setenv("FAKEBIN_PYTHON", sys.executable)
    monkeypatch.setenv("FAKEBIN_CATALOG_ROOT", str(catalog_copy))
    monkeypatch.setenv("INFERMATRIX_ENGINE", "real")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    yield cluster
    for sig, handler in handlers.items():  # `infermatrix run` installs its own
        signal.signal(sig, handler)
    assert leftovers(str(catalog_copy)) == []
