"""Why a filtered plan has no jobs: which filter matched nothing, and the values it could take.

An empty plan is almost always a mistake (a typo, ``--hardware h20`` for ``H200``): the workflow
would publish an empty night. The planner refuses it unless asked (``--allow-empty``).
"""

from __future__ import annotations

from ..catalog.loader import Catalog
from .jobs import FILTER_NAMES, Filters, matches, plan_sweep


def why_empty(cat: Catalog, sweep: str, filters: Filters) -> list[str]:
    """Lines saying why ``sweep`` under ``filters`` plans nothing."""
    every = plan_sweep(cat, sweep)
    if not every:
        return [f"sweep {sweep} plans no jobs, even unfiltered (`infermatrix validate` names "
                "recipes no fleet can run)"]
    lines = []
    for name in FILTER_NAMES:
        valid = sorted({getattr(job, name) for job in every})
        missed = [p for p in getattr(filters, name) if not any(matches(v, p) for v in valid)]
        if missed:
            lines.append(f"--{name} {' '.join(missed)}: matches no job of sweep {sweep}; "
                         f"valid values: {', '.join(valid)}")
    return lines or [f"the filters match jobs of sweep {sweep} one by one but no job together"]
