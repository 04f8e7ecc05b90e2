"""Fixtures for the simulated engine: an in-process server on a free loopback port per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from infermatrix.sim.config import SimConfig
from infermatrix.sim.server import ServerOptions, ServerThread, parse_fault_specs


@pytest.fixture
def sim_server() -> Iterator[Callable[..., ServerThread]]:
    """sim_server(config, time_scale=…, faults="…", tokenizer_dir=…) → a started server."""
    started: list[ServerThread] = []

    def start(config: SimConfig, *, faults: str = "", **kw: Any) -> ServerThread:
        options = ServerOptions(faults=parse_fault_specs([faults] if faults else []), **kw)
        srv = ServerThread(config, options).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
