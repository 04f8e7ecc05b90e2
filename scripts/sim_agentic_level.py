"""One level (or a few) of an agentic capacity search in virtual time, without the search:
P25 output speed and P95 TTFT at N agents, with a shorter measured window if asked. For
seeing which SLO criterion fails where a whole search is too slow (docs/sim.md, Validation).

    .venv/bin/python scripts/sim_agentic_level.py RECIPE N [N ...] [--warmup S] [--duration S]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from infermatrix.capacity.run import settings_of
from infermatrix.capacity.sources import source_of
from infermatrix.capacity.virtual import VirtualLevels
from infermatrix.catalog.loader import load_catalog
from infermatrix.client.tokenizer import load_tokenizer
from infermatrix.plan.measurement import capacity_measurement


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe")
    parser.add_argument("agents", type=int, nargs="+")
    parser.add_argument("--workload", default="agentic-coding")
    parser.add_argument("--warmup", type=float, help="seconds (default: the workload's)")
    parser.add_argument("--duration", type=float, help="measured seconds (default: the workload's)")
    args = parser.parse_args()
    cat = load_catalog()
    m = capacity_measurement(cat, args.workload)
    tok = load_tokenizer(None)
    s = settings_of(m)
    s = dataclasses.replace(s, warmup_s=args.warmup if args.warmup is not None else s.warmup_s,
                            duration_s=args.duration if args.duration is not None else s.duration_s)
    levels = VirtualLevels(cat, args.recipe, source_of(m.sessions, cat.root, tok), s, tok,
                           lambda _line: None)
    for n in args.agents:
        out = levels.measure(n)
        print(f"agents={n:<5} (simulated) P25 speed {out['p25_output_speed']:.2f} tok/s, P95 TTFT "
              f"{out['p95_ttft_ms'] / 1000:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
