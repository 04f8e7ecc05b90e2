"""The benchmark commands docs/catalog.md prints are what `infermatrix run` measures: every level
of every loop, evaluated as the shell would, parses to exactly the level's client settings."""

from __future__ import annotations

import re
import shlex
from functools import partial
from typing import Any

import pytest

from infermatrix.catalog.loader import load_catalog
from infermatrix.client.cli import build_parser, config_from_args
from infermatrix.launch.bench_commands import per_conc, recipe_benchmarks, workload_config
from infermatrix.report.catalog_page import catalog_data

BIND = {"MODEL": "/models/m", "NODE_0": "10.0.0.1", "PORT": "8000"}
CAT = load_catalog()
DATA = catalog_data(CAT, partial(recipe_benchmarks, CAT))
ENTRIES = [e for m in DATA["models"] for e in m["configurations"]]


def arithmetic(expr: str, conc: int) -> str:
    """bash's $(( … )) for what the page uses: *, >, and a ? b : c."""
    e = expr.replace("$CONC", str(conc)).replace("CONC", str(conc))
    m = re.fullmatch(r"\s*(.+?)\s*\?\s*(.+?)\s*:\s*(.+?)\s*", e)
    if m:
        return arithmetic(m.group(2) if eval(m.group(1)) else m.group(3), conc)  # noqa: S307
    assert re.fullmatch(r"[\d\s*+>]+", e), e
    return str(eval(e))  # noqa: S307 - digits and operators only


def expand(line: str, conc: int) -> list[str]:
    line = re.sub(r"\$\(\((.+?)\)\)", lambda m: arithmetic(m.group(1), conc), line)
    line = line.replace("$CONC", str(conc))
    for k, v in BIND.items():
        line = line.replace(f"${{{k}}}", v)
    return shlex.split(line)


def levels(b: dict[str, Any]) -> list[tuple[int, list[str]]]:
    lines = b["ours"]
    if lines[0].startswith("for CONC in"):
        return [(c, expand(lines[1], c)) for c in b["concurrency"]]
    return [(c, expand(line, c)) for c, line in zip(b["concurrency"], lines, strict=True)]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_our_command_is_the_level_run_measures(entry: dict[str, Any]) -> None:
    for b in entry["benchmarks"]:
        wl = CAT.workloads[b["workload"]]
        for conc, argv in levels(b):
            assert argv[:2] == ["infermatrix", "bench"]
            got = config_from_args(build_parser().parse_args(argv[2:]))
            want = workload_config(wl, conc, got.base_url, got.model)
            assert got == want, f"{entry['id']} {b['workload']} conc {conc}"
            assert got.base_url.startswith("http://") and got.model
    fixed = [w for s in CAT.sweeps.values() for e in s.entries if entry["id"] in e.recipes
             for w in e.workloads if CAT.workloads[w].kind == "fixed"]
    assert {b["workload"] for b in entry["benchmarks"]} >= set(fixed)


def test_a_minimum_prompt_count_is_shell_arithmetic() -> None:
    assert per_conc(2, 4) == "$(( CONC * 2 > 4 ? CONC * 2 : 4 ))"
    assert [arithmetic(per_conc(2, 4)[3:-3], c) for c in (1, 2, 3)] == ["4", "4", "6"]
    assert per_conc(1, 1) == "$CONC" and per_conc(0) == "$(( CONC * 0 ))"
    assert per_conc(1.5) is None
