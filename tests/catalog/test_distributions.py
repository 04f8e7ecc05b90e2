"""The catalog's check of a written distribution and the client's parser agree on every form.

The catalog may not import the client (catalog/distributions.py says why), so the two readings
of the one format are held together here, case by case."""

from __future__ import annotations

from typing import Any

import pytest

from infermatrix.catalog.distributions import check_distribution
from infermatrix.client.session_sources import Dist

CASES: list[Any] = [
    5, 0, -3, 2.5, "5", "  7 ", "1e3", "",
    "lognormal:median=150,sigma=1.2", "lognormal:median=120,sigma=1.2,max=16000",
    "lognormal:median=0", "lognormal:sigma=1", "lognormal", "lognormal:median=x",
    "lognormal:median", "lognormal:median=1,sigma=-1", "lognormal:median=1,sigma=0",
    "zipf:a=2", "zipf:a=1.7,low=5,high=200", "zipf:low=10,high=5", "zipf:high=3,a=0",
    "uniform:low=1,high=2", "uniform:low=3,high=2", "uniform:low=2,high=2", "uniform:low=1",
    "gamma:k=1", "lognormal:median=1,colour=2", "constant:value=4", "lognormal:median=1,,",
    {"kind": "lognormal", "median": 150, "sigma": 1.55, "max": 8192},
    {"kind": "lognormal", "median": "150"}, {"kind": "lognormal", "median": "x"},
    {"kind": "constant"}, {}, {"value": 1}, {"kind": "constant", "value": 1, "colour": 2},
    {"kind": "lognormal", "median": -1}, {"kind": "zipf", "high": 10, "a": 0},
    {"kind": "zipf", "high": 10}, {"kind": "uniform", "low": 0, "high": 1},
    {"kind": "uniform", "low": 5, "high": None}, {"kind": "weird", "value": 1},
    True, None, [1],
]


def _client_accepts(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | str | dict):
        return False  # the catalog's own first check: the client is never handed these
    try:
        Dist.parse(value)
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return False
    return True


@pytest.mark.parametrize("value", CASES, ids=repr)
def test_catalog_and_client_agree(value: Any) -> None:
    try:
        assert check_distribution(value) is value
        catalog = True
    except ValueError as exc:
        assert "\n" not in str(exc)
        catalog = False
    assert catalog == _client_accepts(value)
