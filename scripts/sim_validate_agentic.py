"""The agents/GPU rows of infermatrix/sim/data/published.yaml (AA-AgentPerf): each an agentic
capacity search in virtual time (infermatrix.capacity.virtual), compared like
`infermatrix sim validate` compares the others. Slow: a search up to ~1,800 agents simulates for
hours with the step-by-step engine.

    .venv/bin/python scripts/sim_validate_agentic.py [--only TEXT]

The simulator does not import the capacity layer; this script joins the two.
"""

from __future__ import annotations

import argparse
import sys

from infermatrix.capacity.virtual import virtual_capacity
from infermatrix.catalog.loader import load_catalog
from infermatrix.sim.published import load_published
from infermatrix.sim.validate import capacity_runner, run_rows
from infermatrix.sim.validate_report import format_outcome, headline_lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="TEXT")
    args = parser.parse_args()
    rows = [r for r in load_published() if r.metric == "agents_per_gpu"
            and (not args.only or any(t in r.id for t in args.only))]
    runner = capacity_runner(virtual_capacity, log=lambda line: print(line, file=sys.stderr))
    outcomes = run_rows(load_catalog(), rows, progress=lambda o: print(format_outcome(o)),
                        capacity=runner)
    for line in headline_lines(outcomes, load_published()):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
