#!/usr/bin/env python3
"""How fast is the simulated engine in virtual time on this machine?

Runs a sweep of the catalog (default: matrix/sweeps/nightly.yaml, every recipe × workload ×
concurrency level, with the workload's prompt and warm-up counts) through ``simulate`` and
reports simulated requests and tokens per second of wall time, per job and in total.

    .venv/bin/python scripts/bench_sim.py                  # the nightly sweep
    .venv/bin/python scripts/bench_sim.py --sweep smoke --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infermatrix.catalog.loader import load_catalog  # noqa: E402
from infermatrix.catalog.validate import entry_recipes  # noqa: E402
from infermatrix.client.datasets import draw_len  # noqa: E402
from infermatrix.sim import SimConfig, SimRequest, simulate  # noqa: E402

TARGET_S = 600.0  # a nightly-size sweep of the seed catalog should simulate within 10 minutes


def requests_for(isl: int, osl: int, ratio: float, n: int, rng: random.Random) -> list[SimRequest]:
    """Lengths uniform in [ratio × L, L], drawn as the benchmark client draws them."""
    return [SimRequest(draw_len(rng, isl, ratio), draw_len(rng, osl, ratio)) for _ in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", default="nightly", help="sweep name in matrix/sweeps (default nightly)")
    parser.add_argument("--root", type=Path, help="catalog root (default: this checkout)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--token-times", action="store_true",
                        help="record every token's timestamp (what ITL percentiles need; slower)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)

    cat = load_catalog(args.root)
    if args.sweep not in cat.sweeps:
        print(f"bench_sim: unknown sweep {args.sweep!r} (known: {', '.join(cat.sweeps)})", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    rows = []
    total_wall = 0.0
    for entry in cat.sweeps[args.sweep].entries:
        for rid in entry_recipes(cat, entry):
            for wl_name in entry.workloads:
                wl = cat.workloads[wl_name]
                for conc in entry.concurrency:
                    cfg = SimConfig.from_recipe(cat, rid, params={"CONC": conc})
                    n = wl.num_warmups(conc) + wl.num_prompts(conc)
                    reqs = requests_for(wl.isl, wl.osl, wl.range_ratio, n, rng)
                    run = simulate(cfg, reqs, concurrency=conc, record_token_times=args.token_times)
                    tokens = sum(r.completion_tokens for r in run.results)
                    served = sum(1 for r in run.results if r.error is None)
                    total_wall += run.wall_seconds
                    rows.append({"recipe": rid, "workload": wl_name, "concurrency": conc,
                                 "requests": served, "rejected": len(run.results) - served,
                                 "output_tokens": tokens,
                                 "steps": run.steps, "model_seconds": round(run.duration, 3),
                                 "wall_seconds": round(run.wall_seconds, 4),
                                 "requests_per_wall_s": round(served / run.wall_seconds, 1),
                                 "output_tok_per_s_simulated": round(run.output_throughput, 1)})
                    note = f"  ({len(run.results) - served} rejected: {run.results[0].error})" \
                        if served < len(run.results) else ""
                    print(f"{rid:45s} {wl_name:12s} c={conc:<4d} {served:5d} req "
                          f"{run.steps:7d} steps {run.wall_seconds:7.3f} s wall "
                          f"({served / run.wall_seconds:8.0f} req/s)  "
                          f"simulated {run.output_throughput:8.0f} tok/s{note}", flush=True)
    requests = sum(r["requests"] for r in rows)
    tokens = sum(r["output_tokens"] for r in rows)
    summary = {"sweep": args.sweep, "levels": len(rows), "requests": requests,
               "rejected": sum(r["rejected"] for r in rows), "output_tokens": tokens,
               "wall_seconds": round(total_wall, 2),
               "requests_per_wall_s": round(requests / total_wall, 1) if total_wall else None,
               "output_tokens_per_wall_s": round(tokens / total_wall) if total_wall else None,
               "token_times": args.token_times, "target_wall_seconds": TARGET_S,
               "within_target": total_wall < TARGET_S}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "levels": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
