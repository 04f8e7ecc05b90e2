"""Fixtures for the agentic tests: real servers over loopback, each a subprocess we own."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agentic_servers import HERE, SIM_SCALE, Server, free_port  # noqa: E402


@pytest.fixture
def limit_server() -> Iterator[Callable[..., Server]]:
    """limit_server(limit=N, *flags) → the tiny server whose capacity is N agents by
    construction (flags: imx_limit_server.py's own)."""
    started: list[Server] = []

    def start(limit: int, *flags: str) -> Server:
        port = free_port()
        srv = Server(
            [
                sys.executable,
                str(HERE / "imx_limit_server.py"),
                "--port",
                str(port),
                "--limit",
                str(limit),
                *flags,
            ],
            port,
        )
        started.append(srv)
        return srv

    yield start
    for s in started:
        s.stop()


@pytest.fixture(scope="session")
def sim_server() -> Iterator[Server]:
    """The simulated engine (Llama 3.1 70B FP8, H200 TP4) at SIM_SCALE× real time."""
    port = free_port()
    srv = Server(
        [
            sys.executable,
            "-m",
            "infermatrix.sim",
            "serve",
            "--hardware",
            "H200",
            "--model",
            "llama-3.1-70b-instruct",
            "--precision",
            "fp8",
            "--tp",
            "4",
            "--port",
            str(port),
            "--time-scale",
            str(SIM_SCALE),
            "--served-model-name",
            "sim",
            "--log-level",
            "WARNING",
        ],
        port,
    )
    yield srv
    srv.stop()
