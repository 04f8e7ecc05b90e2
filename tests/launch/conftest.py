"""Fake cluster tools on PATH (tests/fakebin), a scratch catalog, and helpers to read what the
fakes recorded and to prove nothing was left running."""

from __future__ import annotations

import os
import random
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from launch_helpers import FakeCluster, leftovers

FAKEBIN = Path(__file__).resolve().parents[1] / "fakebin"


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
