"""Which hardware the simulator has measured efficiency data for.

A GPU that no operator row of ``data/efficiency.yaml`` names, by itself or by its vendor, is
simulated from tuning.py's generic defaults: its figures are a guess, so `validate` and the
simulator say so.
"""

from __future__ import annotations

import sys

from .tables import EfficiencyTables, default_tables

_warned: set[str] = set()


def has_efficiency_data(hardware: str, vendor: str, tables: EfficiencyTables | None = None) -> bool:
    """True when some operator row names this hardware or its vendor."""
    for row in (tables or default_tables()).operators:
        named = row.hardware if isinstance(row.hardware, list) else [row.hardware]
        if hardware in named or f"vendor:{vendor}" in named:
            return True
    return False


def no_data_warning(hardware: str, vendor: str) -> str:
    return (f"the simulator has no efficiency data for {hardware} (vendor {vendor}): simulated "
            "figures use generic defaults (docs/sim.md)")


def warn_if_unknown(hardware: str, vendor: str) -> None:
    """Print the no-data warning on stderr, once per hardware and process."""
    if hardware not in _warned and not has_efficiency_data(hardware, vendor):
        _warned.add(hardware)
        print(f"warning: {no_data_warning(hardware, vendor)}", file=sys.stderr)
