"""The sustained clock: a measured profile times its GEMMs in bursts, at boost clock; a serving
step's compute-bound GEMMs run at the clock the board's power limit sustains (the table's
sustained_clock share, measured on an H100 and an H200 by scripts/measure_sustained_clock.py),
its memory-bound ones keep their speed."""

from __future__ import annotations

import pytest
from sim_helpers import catalog

from infermatrix.sim.config import SimConfig
from infermatrix.sim.operators import StepModel
from infermatrix.sim.tables import default_tables


def _model(hardware: str) -> StepModel:
    return StepModel(SimConfig.from_parts(catalog(), hardware, "llama-3.1-70b-instruct", "fp8",
                                          tp=8, engine="vllm"))


def test_compute_bound_gemms_slow_down_and_memory_bound_ones_do_not() -> None:
    sm = _model("H100")
    share = default_tables().operator("sustained_clock", "H100", "nvidia").compute_eff
    assert sm.clock == share < 1
    big_burst, big = sum(sm._gemms(8192.0)), sum(sm._gemms(8192.0, sustained=True))
    assert big / big_burst == pytest.approx(1 / share, rel=0.05)  # compute-bound: the clock
    small_burst, small = sum(sm._gemms(1.0)), sum(sm._gemms(1.0, sustained=True))
    assert small / small_burst == pytest.approx(1.0, abs=0.01)  # weight reads: no change


def test_hardware_on_the_tables_keeps_its_end_to_end_shares() -> None:
    assert _model("B200").clock == 1.0
