"""`python -m infermatrix.capacity`: how many concurrent agents a deployment serves per SLO tier.

    # against a running server
    python -m infermatrix.capacity --base-url http://127.0.0.1:8000 --gpus 8 \\
        --source trace --dataset-path examples/agentic/manifest.json --tier SLO20=20:10
    # against the simulated engine standing in for a recipe (GPU count, $/h, affinity from it)
    python -m infermatrix.capacity --recipe deepseek-v4-pro/b300-trtllm-nvfp4-1ctx-1gen \\
        --time-scale 5 --synthetic turns=uniform:low=2,high=10 --duration 20 --warmup 5

Mistakes a person can fix print one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..argtypes import bounded_float, bounded_int
from ..catalog.loader import Catalog, load_catalog
from ..catalog.schema import MAX_CONCURRENCY, MAX_FIGURE, MAX_GPUS, MAX_SECONDS, MAX_TOKENS
from ..catalog.yamlsrc import CatalogError
from ..client import affinity as aff
from ..client.config import BenchConfig
from ..client.errors import ClientInputError
from ..client.session_sources import SessionSource, load_source
from ..client.tokenizer import load_tokenizer
from ..launch.monitor import GpuMonitor
from ..launch.provenance import new_run_id
from ..launch.readiness import NotReady
from ..plan.measurement import dist_text
from ..progress import Progress
from ..results import agentic
from ..results.store import Store
from .normalise import Deployment
from .recipe import affinity_of, deployment_of, identity, simulated
from .run import CapacitySettings, Target, find_capacity_sync
from .search import MAX_RESOLUTION_PCT
from .tiers import DEFAULT_TIERS, SloTier, tiers_from

PROG = "infermatrix capacity"  # also: python -m infermatrix.capacity


# every number on the command line is finite and bounded (the flags a workload can also set
# are checked in run(), one line each)
MAX_TIME_SCALE = 1e6
LEVEL = bounded_int(1, MAX_CONCURRENCY)
SECONDS = bounded_float(0, MAX_SECONDS)

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Highest concurrency of closed-loop agents "
        "that passes each SLO tier (AA-AgentPerf methodology).",
    )
    t = p.add_argument_group("target")
    t.add_argument("--base-url", help="a running OpenAI-compatible server")
    t.add_argument(
        "--recipe",
        help="recipe id: GPUs, $/hour and router affinity; without "
        "--base-url the simulated engine is started for it",
    )
    t.add_argument("--catalog-root", type=Path)
    t.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="simulated engine only: run N× faster (tiers and tool delays are scaled "
        "to match; --duration and --warmup are wall-clock seconds)",
    )
    t.add_argument(
        "--backend",
        help="client backend (default: openai-chat, or openai for a workload whose endpoint "
        "is completions)",
    )
    t.add_argument("--model", help="served model id (default: the server's first)")
    t.add_argument("--tokenizer", help="tokenizer.json directory (default: one word = one token)")
    t.add_argument("--engine", help="engine for the cache-flush endpoint (vllm, sglang, sim)")
    t.add_argument(
        "--session-affinity",
        default="auto",
        help="auto (from the recipe's router), none, trtllm, x-session-id, dynamo, header:NAME",
    )
    s = p.add_argument_group("sessions")
    s.add_argument(
        "--workload",
        help="an agentic workload of matrix/workloads.yaml: its sessions and SLO tiers "
        "(flags given here override it)",
    )
    s.add_argument(
        "--source", choices=["synthetic", "trace", "mooncake"], help="default: synthetic"
    )
    s.add_argument("--dataset-path", help="trace manifest (trace) or JSONL (mooncake)")
    s.add_argument(
        "--synthetic",
        action="append",
        default=[],
        metavar="NAME=DIST",
        help="synthetic distribution, e.g. turns=uniform:low=2,high=40 "
        "output_tokens=lognormal:median=150,sigma=1.2 sessions=128",
    )
    s.add_argument("--trace-block-size", type=bounded_int(1, 1 << 20), default=512)
    s.add_argument("--tool-delay", type=SECONDS, help="Mooncake: seconds between turns (default 1)")
    s.add_argument(
        "--max-context-tokens", type=bounded_int(1, MAX_TOKENS), help="end a session before its context passes this"
    )
    q = p.add_argument_group("search")
    q.add_argument(
        "--tier",
        action="append",
        default=[],
        metavar="NAME=SPEED:TTFT_S",
        help="SLO tier (repeatable); default SLO20=20:10 and SLO60=60:5",
    )
    q.add_argument("--start", type=LEVEL, default=1)
    q.add_argument("--max-concurrency", type=LEVEL, default=4096)
    q.add_argument("--resolution", type=LEVEL, default=1, help="stop bisecting when this close")
    q.add_argument("--resolution-pct", type=float, default=0.0,
                   help="or when within this percent of the passing level (0: off)")
    q.add_argument("--duration", type=float, help="measured seconds per level (default 120)")
    q.add_argument("--warmup", type=float, help="unmeasured seconds per level (default 30)")
    q.add_argument("--no-mid-session", action="store_true", help="agents start at turn 0")
    q.add_argument(
        "--no-flush", action="store_true", help="do not call the prefix-cache flush endpoint"
    )
    q.add_argument(
        "--max-error-rate", type=bounded_float(0, 1), help="per level (default: the workload's, else 0.05)"
    )
    q.add_argument("--seed", type=bounded_int(0, 2**63 - 1), default=0)
    n = p.add_argument_group("normalisation and output")
    n.add_argument("--gpus", type=bounded_int(1, MAX_GPUS), help="GPUs of all pools (default: the recipe's)")
    n.add_argument("--usd-per-gpu-hour", type=bounded_float(0, MAX_FIGURE), help="default: the recipe's hardware")
    n.add_argument(
        "--output", "-o", type=Path, help="write the capacity JSON here (default: stdout)"
    )
    n.add_argument(
        "--gpu-monitor",
        choices=["nvidia", "amd"],
        help="sample this machine's GPU power (nvidia-smi / amd-smi) for agents per kW; the "
        "deployment's GPUs must be this machine's",
    )
    n.add_argument("--store", type=Path, help="also save agentic records into this history store")
    n.add_argument(
        "--report",
        type=Path,
        metavar="HTML",
        help="write the agents-per-tier page here (every search in --store, else this one)",
    )
    n.add_argument(
        "--run-id", default=new_run_id(), help="names this search in the store (default: new)"
    )
    n.add_argument("--quiet", action="store_true")
    return p


def _deployment(cat: Catalog | None, args: argparse.Namespace) -> Deployment:
    base = deployment_of(cat, args.recipe) if cat and args.recipe else None
    gpus = args.gpus or (base.gpus if base else None)
    if not gpus:
        raise ClientInputError("give --gpus (or --recipe) to normalise per GPU")
    usd = args.usd_per_gpu_hour or (base.usd_per_gpu_hour if base else None)
    return Deployment(gpus=gpus, usd_per_gpu_hour=usd)


def _identity(cat: Catalog | None, args: argparse.Namespace, simulated_run: bool) -> dict[str, Any]:
    return identity(cat, args.recipe, args.workload, simulated=simulated_run,
                    time_scale=args.time_scale, run_id=args.run_id)


def _source(args: argparse.Namespace) -> SessionSource:
    tok = load_tokenizer(args.tokenizer)
    return load_source(
        args.source,
        tok,
        path=args.dataset_path,
        synthetic=args.synthetic,
        block_size=args.trace_block_size,
        tool_delay_s=args.tool_delay,
        seed=args.seed,
    )


def apply_workload(args: argparse.Namespace, cat: Catalog | None) -> list[SloTier]:
    """Fill unset flags from ``--workload`` (an agentic workload), then from the defaults;
    return the tiers to search."""
    wl_tiers: list[SloTier] = []
    if args.workload:
        if cat is None or args.workload not in cat.workloads:
            raise ClientInputError(f"unknown workload {args.workload!r}")
        wl = cat.workloads[args.workload]
        if wl.kind != "agentic":
            raise ClientInputError(f"workload {args.workload!r} is {wl.kind}, not agentic")
        wl_tiers = [SloTier.model_validate(t.model_dump()) for t in wl.slo_tiers]
        if wl.sessions is not None:
            ses = wl.sessions
            args.source = args.source or ses.source
            if args.dataset_path is None and ses.path:
                args.dataset_path = str(cat.root / ses.path)
            flags = {k.split("=", 1)[0].strip().replace("-", "_") for k in args.synthetic}
            args.synthetic = [
                f"{k}={dist_text(v)}" for k, v in ses.distributions.items() if k not in flags
            ] + args.synthetic
            args.duration = args.duration if args.duration is not None else ses.duration_s
            args.warmup = args.warmup if args.warmup is not None else ses.warmup_s
            args.tool_delay = args.tool_delay if args.tool_delay is not None else ses.tool_delay_s
            args.no_mid_session = args.no_mid_session or not ses.mid_session
            args.max_context_tokens = args.max_context_tokens or ses.max_context_tokens
        if args.max_error_rate is None:
            args.max_error_rate = wl.max_error_rate
        if args.backend is None:
            args.backend = "openai-chat" if wl.endpoint == "chat" else "openai"
    for name, default in (
        ("source", "synthetic"),
        ("duration", 120.0),
        ("warmup", 30.0),
        ("tool_delay", 1.0),
        ("max_error_rate", 0.05),
        ("backend", "openai-chat"),
    ):
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.tier:
        return tiers_from(args.tier)
    return wl_tiers or list(DEFAULT_TIERS)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not args.base_url and not args.recipe:
        raise ClientInputError("give --base-url, or --recipe to search the simulated engine")
    if not 0 < args.time_scale <= MAX_TIME_SCALE:  # checks written so that nan fails them too
        raise ClientInputError(f"--time-scale must be positive and at most {MAX_TIME_SCALE:g}")
    cat = load_catalog(args.catalog_root) if args.recipe or args.workload else None
    if args.recipe and args.recipe not in cat.recipes:  # type: ignore[union-attr]
        raise ClientInputError(f"unknown recipe {args.recipe!r}")
    tiers = apply_workload(args, cat)
    if not 0 <= args.resolution_pct <= MAX_RESOLUTION_PCT:
        raise ClientInputError(f"--resolution-pct must be within 0..{MAX_RESOLUTION_PCT:g}")
    if not (0 < args.duration <= MAX_SECONDS and 0 <= args.warmup <= MAX_SECONDS):
        raise ClientInputError(f"--duration must be above 0 and --warmup at least 0, both finite "
                               f"and at most {MAX_SECONDS:g} s")
    wall_tiers = [t.scaled(args.time_scale) for t in tiers]
    dep = _deployment(cat, args)
    if args.session_affinity == "auto":
        affinity = affinity_of(cat, args.recipe) if cat and args.recipe else aff.NONE
    else:
        affinity = aff.parse(args.session_affinity)
    source = _source(args)
    settings = CapacitySettings(
        duration_s=args.duration,
        warmup_s=args.warmup,
        mid_session=not args.no_mid_session,
        start=args.start,
        max_concurrency=args.max_concurrency,
        resolution=args.resolution,
        resolution_pct=args.resolution_pct,
        max_error_rate=args.max_error_rate,
        flush_cache=not args.no_flush,
        max_context_tokens=args.max_context_tokens,
        seed=args.seed,
        time_scale=args.time_scale,
    )
    log = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))

    def search(
        base_url: str, model: str | None, engine: str | None, simulated_run: bool
    ) -> dict[str, Any]:
        cfg = BenchConfig(
            backend=args.backend,
            base_url=base_url,
            model=model,
            tokenizer=args.tokenizer,
            ignore_eos=True,
            disable_tqdm=True,
        )
        target = Target(cfg, engine=engine, affinity=affinity, power=power)
        with Progress(None, "capacity", unit="level", enabled=not args.quiet) as progress:
            return find_capacity_sync(
                target,
                source,
                wall_tiers,
                dep,
                settings,
                log=log,
                meta=_identity(cat, args, simulated_run),
                progress=progress,
            )

    monitor = None
    power = None
    if args.gpu_monitor:
        monitor = GpuMonitor(
            args.gpu_monitor, Path(tempfile.mkdtemp(prefix="imx-power-")) / "gpu.csv"
        )
        if monitor.start().error:
            raise ClientInputError(f"--gpu-monitor: {monitor.error}")

        def power(t0: float, t1: float) -> float | None:
            return monitor.energy(t0, t1)[1]  # mean total watts of all sampled GPUs

    try:
        if args.base_url:
            doc = search(args.base_url, args.model, args.engine, False)
        else:
            assert cat is not None
            with (
                tempfile.TemporaryDirectory(prefix="imx-capacity-") as tmp,
                simulated(cat, args.recipe, Path(tmp), args.time_scale) as launched,
            ):
                doc = search(launched.base_url, launched.served_model, "sim", True)
    finally:
        if monitor is not None:
            monitor.stop()
    doc["sessions"] = {  # what the agents ran (flags, filled from --workload)
        "source": args.source,
        "dataset_path": args.dataset_path,
        "synthetic": args.synthetic if args.source == "synthetic" else [],
        "tool_delay_s": args.tool_delay if args.source == "mooncake" else None,
    }
    if args.time_scale != 1.0:  # report the tiers as asked, not in wall-clock units
        for entry, tier in zip(doc["tiers"], tiers, strict=True):
            entry["tier"] = tier.model_dump()
    return doc


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        doc = run(args)
    except CatalogError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except (ClientInputError, NotReady, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(doc, indent=2)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.output.with_suffix(args.output.suffix + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, args.output)
    else:
        print(text)
    records = agentic.records_from_document(doc)
    if args.store:
        with Store(args.store) as store:
            agentic.save(store, records)
            records = agentic.load(store)
    if args.report:
        from ..report.agentic import write_agentic_page  # report/ only when a page is asked for

        write_agentic_page(records, args.report)
    for t in doc["tiers"]:
        print(
            f"{t['tier']['name']}: {t['passing_concurrency']} agents"
            f"{'' if t['bounded'] else ' (max searched, still passing)'}, "
            f"{_per(t['agents_per_gpu'])}/GPU over {t['gpus']} GPUs",
            file=sys.stderr,
        )
    return 0


def _per(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"
