"""`infermatrix capacity`: how many concurrent agents a deployment serves per SLO tier.

    # against a running server (an ad-hoc search: no job)
    infermatrix capacity --base-url http://127.0.0.1:8000 --gpus 8 \\
        --source trace --dataset-path examples/agentic/manifest.json --tier SLO20=20:10
    # a recipe × agentic workload: the planner's job, run through the one loop on the
    # simulated engine (real time, --time-scale N× faster) or in virtual time (--virtual)
    infermatrix capacity --recipe deepseek-v4-pro/b300-trtllm-nvfp4-1ctx-1gen \\
        --workload agentic-coding --virtual --output-dir results

A recipe's search is the job `plan` makes for it (``plan.jobs.make_job``, with this command's
flags as overrides of the sweep entry's bounds and the workload's sessions), measured by
``launch.loop.run_measurement`` like any job: the capacity document is the one the planned job
writes. It writes no store and draws no page: `infermatrix collect` and `report` do, from the
run folder (``--output-dir``). Mistakes a person can fix print one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..argtypes import bounded_float, bounded_int
from ..capacity.normalise import Footprint
from ..capacity.recipe import affinity_of, footprint_of, identity
from ..capacity.run import CapacitySettings, Target, find_capacity_sync
from ..capacity.search import MAX_RESOLUTION_PCT
from ..capacity.tiers import DEFAULT_TIERS, SloTier, tiers_from
from ..catalog.loader import Catalog, load_catalog
from ..catalog.schema import (
    MAX_CONCURRENCY,
    MAX_FIGURE,
    MAX_GPUS,
    MAX_SECONDS,
    MAX_TOKENS,
    SloTierSpec,
)
from ..catalog.yamlsrc import CatalogError
from ..client import affinity as aff
from ..client.backends import backend_for
from ..client.config import BenchConfig
from ..client.errors import ClientInputError
from ..client.session_sources import SessionSource, load_source
from ..client.tokenizer import load_tokenizer
from ..errors import UsageError
from ..launch.deploy import start_sim
from ..launch.drain import settle
from ..launch.executors import Served, Virtual
from ..launch.loop import Executor, run_measurement
from ..launch.monitor import GpuMonitor
from ..launch.provenance import new_run_id
from ..launch.readiness import NotReady
from ..launch.strategies import CAPACITY_FILE
from ..plan.jobs import Job, default_runner, entry_listing, make_job
from ..plan.measurement import CapacityMeasurement, SessionPlan, capacity_measurement
from ..progress import Progress
from ..results import agentic
from ..results.store import Store

PROG = "infermatrix capacity"
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
    t.add_argument("--virtual", action="store_true",
                   help="with --recipe: search in the simulator's virtual time (no server, "
                        "no sleeping; the same document as the planned job's)")
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
    s.add_argument("--trace-block-size", type=bounded_int(1, 1 << 20), help="default 512")
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
    q.add_argument("--start", type=LEVEL, help="first level (default: the sweep entry's, else 1)")
    q.add_argument("--max-concurrency", type=LEVEL, help="default: the sweep entry's, else 4096")
    q.add_argument("--resolution", type=LEVEL, help="stop bisecting when this close (default 1)")
    q.add_argument("--resolution-pct", type=float,
                   help="or when within this percent of the passing level (default 0: off)")
    q.add_argument("--duration", type=float, help="measured seconds per level (default 120)")
    q.add_argument("--warmup", type=float, help="unmeasured seconds per level (default 30)")
    q.add_argument("--no-mid-session", action="store_true", help="agents start at turn 0")
    q.add_argument(
        "--no-flush", action="store_true", help="do not call the prefix-cache flush endpoint"
    )
    q.add_argument(
        "--max-error-rate", type=bounded_float(0, 1), help="per level (default: the workload's, else 0.05)"
    )
    q.add_argument("--seed", type=bounded_int(0, 2**63 - 1), help="default 0")
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
    n.add_argument("--output-dir", type=Path,
                   help="with --recipe: keep the job's run folder (<run-id>/jobs/<job-id>/) here "
                        "for `infermatrix collect` (default: a temporary folder)")
    n.add_argument("--store", type=Path, help="with --base-url: also save agentic records into "
                                              "this history store")
    n.add_argument(
        "--report",
        type=Path,
        metavar="HTML",
        help="with --base-url: write the agents-per-tier page here (every search in --store, "
        "else this one)",
    )
    n.add_argument(
        "--run-id", default=new_run_id(), help="names this search in the store (default: new)"
    )
    n.add_argument("--quiet", action="store_true")
    return p


def _footprint(cat: Catalog | None, args: argparse.Namespace) -> Footprint:
    base = footprint_of(cat, args.recipe) if cat and args.recipe else None
    gpus = args.gpus or (base.gpus if base else None)
    if not gpus:
        raise ClientInputError("give --gpus (or --recipe) to normalise per GPU")
    usd = args.usd_per_gpu_hour or (base.usd_per_gpu_hour if base else None)
    return Footprint(gpus=gpus, usd_per_gpu_hour=usd)


def _source(args: argparse.Namespace) -> SessionSource:
    tok = load_tokenizer(args.tokenizer)
    return load_source(
        args.source,
        tok,
        path=args.dataset_path,
        synthetic=args.synthetic,
        block_size=args.trace_block_size or SessionPlan.model_fields["block_size"].default,
        tool_delay_s=args.tool_delay,
        seed=args.seed or 0,
    )


def _merge_synthetic(base: list[str], given: list[str]) -> list[str]:
    """The workload's NAME=DIST items, each replaced by a flag naming the same distribution."""
    flags = {k.split("=", 1)[0].strip().replace("-", "_") for k in given}
    return [item for item in base if item.split("=", 1)[0] not in flags] + given


def apply_workload(args: argparse.Namespace, cat: Catalog | None) -> list[SloTier]:
    """Fill unset flags from ``--workload`` (an agentic workload: the job's own measurement,
    ``plan.measurement.capacity_measurement``, clamped to ``--recipe``'s context when given),
    then from the defaults; return the tiers to search."""
    wl_tiers: list[SloTier] = []
    if args.workload:
        m = _measurement(cat, args)
        wl = cat.workloads[args.workload]  # type: ignore[union-attr]
        wl_tiers = [SloTier.model_validate(t.model_dump()) for t in m.tiers]
        if wl.sessions is not None:
            ses = m.sessions
            args.source = args.source or ses.source
            if args.dataset_path is None and ses.path:
                args.dataset_path = str(cat.root / ses.path)  # type: ignore[union-attr]
            args.synthetic = _merge_synthetic(ses.synthetic, args.synthetic)
            args.duration = args.duration if args.duration is not None else ses.duration_s
            args.warmup = args.warmup if args.warmup is not None else ses.warmup_s
            args.tool_delay = args.tool_delay if args.tool_delay is not None else ses.tool_delay_s
            args.no_mid_session = args.no_mid_session or not ses.mid_session
            args.max_context_tokens = args.max_context_tokens or ses.max_context_tokens
        if args.max_error_rate is None:
            args.max_error_rate = m.max_error_rate
        if args.backend is None:
            args.backend = backend_for(wl.endpoint)
    for name, default in (
        ("source", "synthetic"),
        ("duration", 120.0),
        ("warmup", 30.0),
        ("tool_delay", 1.0),
        ("max_error_rate", 0.05),
        ("backend", "openai-chat"),
        ("start", 1),
        ("max_concurrency", 4096),
        ("resolution", 1),
        ("resolution_pct", 0.0),
        ("seed", 0),
    ):
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.tier:
        return tiers_from(args.tier)
    return wl_tiers or list(DEFAULT_TIERS)


def _measurement(cat: Catalog | None, args: argparse.Namespace,
                 **search: Any) -> CapacityMeasurement:
    """The agentic workload's capacity measurement, as the planner settles it."""
    if cat is None or args.workload not in cat.workloads:
        raise ClientInputError(f"unknown workload {args.workload!r}")
    try:
        return capacity_measurement(cat, args.workload, recipe_id=args.recipe, **search)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ClientInputError(f"{where}: {err['msg']}") from None


def _session_plan(args: argparse.Namespace) -> dict[str, Any]:
    """What the agents of an ad-hoc search ran, in a job's ``sessions`` shape."""
    return SessionPlan(
        source=args.source, path=args.dataset_path,
        synthetic=args.synthetic if args.source == "synthetic" else [],
        tool_delay_s=args.tool_delay,
        block_size=args.trace_block_size or SessionPlan.model_fields["block_size"].default,
        duration_s=args.duration, warmup_s=args.warmup, mid_session=not args.no_mid_session,
        max_context_tokens=args.max_context_tokens, seed=args.seed,
    ).model_dump(mode="json")


def ad_hoc(args: argparse.Namespace, cat: Catalog | None) -> dict[str, Any]:
    """A search against a running server (``--base-url``): no job, no launch."""
    tiers = apply_workload(args, cat)
    wall_tiers = [t.scaled(args.time_scale) for t in tiers]  # a simulated engine run N× faster
    if not 0 <= args.resolution_pct <= MAX_RESOLUTION_PCT:
        raise ClientInputError(f"--resolution-pct must be within 0..{MAX_RESOLUTION_PCT:g}")
    if not (0 < args.duration <= MAX_SECONDS and 0 <= args.warmup <= MAX_SECONDS):
        raise ClientInputError(f"--duration must be above 0 and --warmup at least 0, both finite "
                               f"and at most {MAX_SECONDS:g} s")
    dep = _footprint(cat, args)
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
    cfg = BenchConfig(backend=args.backend, base_url=args.base_url, model=args.model,
                      tokenizer=args.tokenizer, ignore_eos=True, disable_tqdm=True)
    urls = [cfg.root_url]

    def between() -> dict[str, Any]:  # as the job loop does before each searched level
        return settle(urls, settings.drain_timeout_s, args.engine if settings.flush_cache else None)

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
        with Progress(None, "capacity", unit="level", enabled=not args.quiet) as progress:
            doc = find_capacity_sync(
                Target(cfg, affinity=affinity, power=power, between=between), source, wall_tiers,
                dep, settings, log=log, progress=progress,
                meta=identity(cat, args.recipe, args.workload, simulated=False,
                              time_scale=args.time_scale, run_id=args.run_id))
    finally:
        if monitor is not None:
            monitor.stop()
    doc["sessions"] = _session_plan(args)  # what the agents ran (flags, filled from --workload)
    if args.time_scale != 1.0:  # report the tiers as asked, not in wall-clock units
        for entry, tier in zip(doc["tiers"], tiers, strict=True):
            entry["tier"] = tier.model_dump()
    return doc


# flags of an ad-hoc search only: a recipe's job takes them from the recipe (GPUs, $/h,
# affinity, engine), from its measurement (flush), or leaves them to collect and report
AD_HOC_ONLY = ("gpus", "usd_per_gpu_hour", "model", "tokenizer", "engine", "backend",
               "gpu_monitor", "store", "report", "no_flush")
# flag -> the job measurement's field it overrides (sweep entry bounds, workload sessions)
OVERRIDES = (("start", "start"), ("max_concurrency", "max_concurrency"),
             ("resolution", "resolution"), ("duration", "duration_s"), ("warmup", "warmup_s"),
             ("tool_delay", "tool_delay_s"), ("max_context_tokens", "max_context_tokens"),
             ("seed", "seed"), ("max_error_rate", "max_error_rate"), ("source", "source"),
             ("dataset_path", "path"), ("trace_block_size", "block_size"))


def capacity_job(cat: Catalog, args: argparse.Namespace) -> Job:
    """The job `plan` makes for ``--recipe`` × ``--workload`` (the first sweep entry listing
    them brings the bounds, the recipe's first fleet the runner), with the flags given here
    as overrides."""
    search: dict[str, Any] = {k: getattr(args, f) for f, k in OVERRIDES
                              if getattr(args, f) is not None}
    if args.resolution_pct:  # 0: off, as a job leaves it unset
        search["resolution_pct"] = args.resolution_pct
    if args.no_mid_session:
        search["mid_session"] = False
    if args.tier:
        search["tiers"] = [SloTierSpec.model_validate(t.model_dump()) for t in tiers_from(args.tier)]
    if args.synthetic:
        search["synthetic"] = _merge_synthetic(_measurement(cat, args).sessions.synthetic,
                                               args.synthetic)
    runner = default_runner(cat, args.recipe)
    if runner is None:
        raise ClientInputError(f"no runner fleet can run {args.recipe}")
    found = entry_listing(cat, args.recipe, args.workload)
    sweep, entry = found if found else ("adhoc", None)
    bounds = getattr(entry, "capacity", None)
    start = search.get("start", getattr(bounds, "start", None) or 1)
    if start > search.get("max_concurrency", start):  # a bound below the entry's start
        search["start"] = search["max_concurrency"]
    _measurement(cat, args, **search)  # bad overrides: one line, before the job is made
    return make_job(cat, sweep, args.recipe, args.workload, runner, [], entry, search=search)


def as_job(args: argparse.Namespace, cat: Catalog) -> dict[str, Any]:
    """``--recipe`` × ``--workload`` searched as its planned job, through the one loop."""
    given = [f"--{f.replace('_', '-')}" for f in AD_HOC_ONLY if getattr(args, f)]
    if args.session_affinity != "auto":
        given.append("--session-affinity")
    if args.virtual and args.time_scale != 1.0:
        given.append("--time-scale")
    if given:
        raise ClientInputError(f"{', '.join(given)}: not with --recipe (its job takes GPUs, $/h "
                               "and affinity from the recipe; collect and report store and "
                               "draw its results); give --base-url to search a running server")
    if args.workload is None:  # the catalog's first agentic workload
        args.workload = next((n for n, w in cat.workloads.items() if w.kind == "agentic"), None)
    if args.workload in cat.workloads and cat.workloads[args.workload].kind != "agentic":
        raise ClientInputError(f"workload {args.workload!r} is "
                               f"{cat.workloads[args.workload].kind}, not agentic")
    job = capacity_job(cat, args)
    log = (lambda _m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    with (tempfile.TemporaryDirectory(prefix="imx-capacity-") as tmp,
          Progress(None, "capacity", unit="level", enabled=not args.quiet) as progress):
        if args.virtual:
            executor: Executor = Virtual()
        else:
            sim_args = ["--time-scale", str(args.time_scale), "--log-level", "WARNING"]
            executor = Served(partial(start_sim, cat, args.recipe, extra_args=sim_args), "local",
                              time_scale=args.time_scale, progress=progress)
        out = (args.output_dir or Path(tmp)) / args.run_id
        outcome = run_measurement(cat, job, out, args.run_id, executor, log=log)
        if outcome.status != "ok":
            raise JobFailed(f"job {job.id}: {outcome.error or outcome.status} (see {outcome.job_dir})")
        doc: dict[str, Any] = json.loads((outcome.job_dir / CAPACITY_FILE).read_text())
    if args.output_dir:
        print(f"job folder: {outcome.job_dir}", file=sys.stderr)
    return doc


class JobFailed(Exception):
    """The capacity job ran and failed (its manifest says why)."""


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not args.base_url and not args.recipe:
        raise ClientInputError("give --base-url, or --recipe to search the simulated engine")
    if not 0 < args.time_scale <= MAX_TIME_SCALE:  # checks written so that nan fails them too
        raise ClientInputError(f"--time-scale must be positive and at most {MAX_TIME_SCALE:g}")
    cat = load_catalog(args.catalog_root) if args.recipe or args.workload else None
    if args.recipe and args.recipe not in cat.recipes:  # type: ignore[union-attr]
        raise ClientInputError(f"unknown recipe {args.recipe!r}")
    if args.base_url:
        return ad_hoc(args, cat)
    assert cat is not None
    return as_job(args, cat)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        doc = run(args)
    except CatalogError as exc:
        exc.report(sys.stderr)
        return 2
    except (ClientInputError, NotReady, UsageError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except JobFailed as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
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
