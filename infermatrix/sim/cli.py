"""`infermatrix sim serve|info|validate|profile|opcheck`: run the simulated engine, print the
numbers it would use, check it against published results, or measure a GPU's operators into a
hardware profile and check the operator model against one (profile_cli.py).

    infermatrix sim serve --recipe llama-3.1-70b-instruct/h200-vllm-fp8 --port 8123
    infermatrix sim serve --hardware H100 --model llama-3.1-70b-instruct --precision fp8 --tp 4
    python -m infermatrix.sim serve ...   (the same)
    infermatrix sim validate --split report --check

Mistakes a person can fix print one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

from ..argtypes import bounded_float, bounded_int
from ..catalog.loader import load_catalog
from ..catalog.yamlsrc import CatalogError
from . import profile_cli
from .config import SimConfig, SimConfigError
from .faults import FaultError
from .profiles import ProfileError
from .router import ROUTER_POLICIES
from .tokens import TokenizerError
from .tuning import Tuning

PROG = "infermatrix sim"


# every number on the command line is finite and bounded (docs/sim.md lists the defaults)
DEGREE = bounded_int(1, 1 << 16)
COUNT = bounded_int(1, 1 << 24)
FRACTION = bounded_float(0, 1, lo_open=True)
MAX_TIME_SCALE = 1e6

def _add_config_arguments(p: argparse.ArgumentParser) -> None:
    what = p.add_argument_group("what to simulate (a recipe, or hardware × model × parallelism)")
    what.add_argument("--recipe", help="recipe id, e.g. llama-3.1-70b-instruct/h200-vllm-fp8")
    what.add_argument("--hardware", help="hardware name from matrix/hardware.yaml")
    what.add_argument("--model", help="model name from matrix/models.yaml")
    what.add_argument("--precision", help="weight precision (bf16, fp8, nvfp4, ...)")
    what.add_argument("--tp", type=DEGREE, help="tensor parallel size (default 1)")
    what.add_argument("--pp", type=DEGREE, help="pipeline parallel size (default 1)")
    what.add_argument("--dp", type=DEGREE, help="data parallel size (default 1)")
    what.add_argument("--ep", type=DEGREE, help="expert parallel size (default 1)")
    what.add_argument("--attention-dp", action="store_true", help="data-parallel attention inside tp")
    what.add_argument("--instances", type=DEGREE, help="identical instances behind the router (default 1)")
    what.add_argument("--router-policy",
                      help=f"router policy with several instances ({', '.join(ROUTER_POLICIES)})")
    what.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                      help="bind a recipe ${NAME} placeholder, e.g. CONC=64 (repeatable)")
    what.add_argument("--catalog-root", type=Path, help="catalog root (default: this checkout)")
    knobs = p.add_argument_group("engine knobs (override the recipe)")
    knobs.add_argument("--max-num-seqs", type=COUNT, help="max sequences per batch (default: recipe or 256)")
    knobs.add_argument("--max-num-batched-tokens", type=COUNT, help="token budget per step (default 8192)")
    knobs.add_argument("--memory-fraction", type=FRACTION, help="share of HBM for weights + KV (default 0.9)")
    knobs.add_argument("--kv-cache-dtype", help="KV-cache dtype (default: recipe, else bf16)")
    knobs.add_argument("--block-size", type=COUNT, help="tokens per KV block (default 16)")
    knobs.add_argument("--max-model-len", type=COUNT, help="context limit (default: recipe or model)")
    knobs.add_argument("--no-prefix-caching", action="store_true", help="disable the prefix cache")
    knobs.add_argument("--spec-draft-tokens", type=bounded_int(0, 64), help="speculative draft tokens per step")
    knobs.add_argument("--spec-acceptance", type=bounded_float(0, 1), help="per-draft-token acceptance rate")
    knobs.add_argument("--tuning", action="append", default=[], metavar="NAME=VALUE",
                       help="override a constant of infermatrix/sim/tuning.py (repeatable)")
    knobs.add_argument("--served-model-name", help="model id the API answers to (default: checkpoint)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sim_command",
                                metavar="{serve,info,validate,profile,opcheck}")
    serve = sub.add_parser("serve", help="serve the OpenAI-compatible API of a simulated deployment")
    _add_config_arguments(serve)
    run = serve.add_argument_group("server")
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8000)
    run.add_argument("--time-scale", type=float, default=1.0,
                     help="divide every modelled duration by this (default 1.0: real time)")
    run.add_argument("--faults", action="append", default=[], metavar="SPEC",
                     help="server-wide faults, e.g. 'stall:after=5,seconds=2;error:status=503,rate=0.1' "
                          "(see docs/sim.md); per request: header X-Sim-Fault")
    run.add_argument("--seed", type=bounded_int(0, 2**63 - 1), default=0, help="seed for routing and fault draws")
    run.add_argument("--tokenizer", help="local directory with tokenizer.json to count prompt tokens")
    run.add_argument("--parent-pid", type=bounded_int(1, 2**31 - 1), metavar="PID",
                     help="exit once this process is gone (the runner that started the server)")
    run.add_argument("--log-level", default="INFO")
    info = sub.add_parser("info", help="print the numbers a simulated deployment runs on (JSON)")
    _add_config_arguments(info)
    val = sub.add_parser("validate", help="simulate published results and compare (docs/sim.md)")
    val.add_argument("--split", choices=("calibrate", "report", "all"), default="all",
                     help="which rows to run (default all; 'report' rows were never fitted on)")
    val.add_argument("--only", action="append", default=[], metavar="TEXT",
                     help="run only rows whose id contains TEXT (repeatable)")
    source = val.add_mutually_exclusive_group()
    source.add_argument("--table", type=Path,
                        help="published-results YAML (default: the built-in one)")
    source.add_argument("--inferencex", type=Path, metavar="JSON",
                        help="run InferenceX's own results export instead (its dashboard's JSON "
                             "array of records): every single-node point as report rows")
    val.add_argument("--ttft", action="store_true",
                     help="with --inferencex: a median-TTFT row per point as well")
    val.add_argument("--plot", type=Path, default=Path("sim-validate.png"),
                     help="where to write the published-vs-simulated plot (default sim-validate.png)")
    val.add_argument("--no-plot", action="store_true", help="skip the plot")
    val.add_argument("--check", action="store_true",
                     help="exit 1 unless the out-of-source rows (report rows sharing no source "
                          "or setup with calibrate rows) meet issue 32's bounds: median |error| "
                          "<= 20%%, >= 90%% within 2x, TTFT rows' median <= 30%%")
    val.add_argument("--catalog-root", type=Path, help="catalog root (default: this checkout)")
    profile_cli.add_arguments(sub)


def build_config(args: argparse.Namespace) -> SimConfig:
    """The SimConfig the arguments describe (raises SimConfigError / CatalogError)."""
    overrides: dict[str, str] = {}
    for item in args.tuning:
        name, eq, value = item.partition("=")
        if not eq:
            raise SimConfigError(f"--tuning expects NAME=VALUE, got {item!r}")
        overrides[name.strip()] = value.strip()
    try:
        tuning = Tuning().with_overrides(overrides)
    except ValueError as exc:
        raise SimConfigError(str(exc)) from None
    cat = load_catalog(args.catalog_root)
    knobs: dict[str, Any] = {
        "max_num_seqs": args.max_num_seqs, "max_num_batched_tokens": args.max_num_batched_tokens,
        "memory_fraction": args.memory_fraction, "kv_dtype": args.kv_cache_dtype,
        "block_size": args.block_size, "max_model_len": args.max_model_len,
    }
    if args.no_prefix_caching:
        knobs["prefix_caching"] = False
    if args.spec_draft_tokens is not None:
        knobs["spec_draft_tokens"] = args.spec_draft_tokens
    if args.spec_acceptance is not None:
        knobs["spec_acceptance"] = args.spec_acceptance
    parts = ("hardware", "model", "precision", "tp", "pp", "dp", "ep", "attention_dp", "instances",
             "router_policy")
    if args.recipe:
        clash = [f"--{n.replace('_', '-')}" for n in parts if getattr(args, n)]
        if clash:
            raise SimConfigError(f"--recipe fixes the deployment; drop {', '.join(clash)} "
                                 "(or describe it with --hardware/--model instead of --recipe)")
        params = {}
        for item in args.param:
            name, eq, value = item.partition("=")
            if not eq:
                raise SimConfigError(f"--param expects NAME=VALUE, got {item!r}")
            params[name.strip()] = value.strip()
        return SimConfig.from_recipe(cat, args.recipe, served_model_name=args.served_model_name,
                                     params=params, tuning=tuning, **knobs)
    missing = [f"--{n}" for n in ("hardware", "model", "precision") if not getattr(args, n)]
    if missing:
        raise SimConfigError(f"give --recipe, or {', '.join(missing)}")
    knobs = {k: v for k, v in knobs.items() if v is not None}
    return SimConfig.from_parts(
        cat, args.hardware, args.model, args.precision, tp=args.tp or 1, pp=args.pp or 1,
        dp=args.dp or 1, ep=args.ep or 1, attention_dp=args.attention_dp,
        instances=args.instances or 1, router_policy=args.router_policy or "round_robin",
        served_model_name=args.served_model_name,
        tuning=tuning, **knobs)


def _serve(args: argparse.Namespace, config: SimConfig) -> int:
    from .server import ServerOptions, parse_fault_specs, serve

    options = ServerOptions(time_scale=args.time_scale, faults=parse_fault_specs(args.faults),
                            seed=args.seed, tokenizer_dir=args.tokenizer)
    from .tokens import PromptTokenizer
    PromptTokenizer(args.tokenizer)  # fail before listening on a bad tokenizer
    if args.parent_pid is not None:
        from .watchdog import watch_parent

        watch_parent(args.parent_pid)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    print(json.dumps({"simulated": config.summary()}), file=sys.stderr, flush=True)
    try:
        asyncio.run(serve(config, args.host, args.port, options))
    except OSError as exc:
        print(f"{PROG}: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


# acceptance bounds on the out-of-source rows (issue 32)
MAX_MEDIAN_ERROR = 0.20
MIN_WITHIN_2X = 0.90
MAX_TTFT_MEDIAN_ERROR = 0.30


def _validate(args: argparse.Namespace) -> int:
    from ..progress import Progress
    from .published import PUBLISHED_FILE, load_published, out_of_source
    from .validate import run_rows
    from .validate_report import format_outcome, headline_lines, plot
    from .validate_score import Outcome, summarise

    if args.ttft and not args.inferencex:
        raise SimConfigError("--ttft goes with --inferencex")
    if args.inferencex:
        from .inferencex import inferencex_rows

        rows, left_out = inferencex_rows(args.inferencex, ttft=args.ttft)
        if left_out:
            print("left out: " + ", ".join(f"{n} ({why})" for why, n in left_out.most_common()))
    else:
        rows = load_published(args.table or PUBLISHED_FILE)
    # the whole table's calibrate rows decide what is out of source
    table = rows if not args.inferencex else load_published(PUBLISHED_FILE)
    if args.split != "all":
        rows = [r for r in rows if r.split == args.split]
    if args.only:
        rows = [r for r in rows if any(t in r.id for t in args.only)]
    if not rows:
        raise SimConfigError("no published rows match --split/--only")
    cat = load_catalog(args.catalog_root)
    print("SIMULATED vs published (infermatrix sim validate)")
    print(f"{'split':9s} {'id':46s} {'metric':19s} {'published':>10s} {'simulated':>10s}  error")
    with Progress(len(rows), "sim validate", unit="row") as bar:
        def done(o: Outcome) -> None:
            bar.write(format_outcome(o), file=sys.stdout)
            bar.advance()

        outcomes = run_rows(cat, rows, progress=done)
    print()
    verdict = 0
    for line in headline_lines(outcomes, table):
        print(line)
    oos_ids = {r.id for r in out_of_source([o.row for o in outcomes], table)}
    headline = [o for o in outcomes if o.row.id in oos_ids]
    if args.check and headline:
        summary = summarise(headline)
        ttft = [o for o in headline if o.row.metric == "ttft_ms"]
        verdict = int(summary.median_error > MAX_MEDIAN_ERROR or summary.within_2x < MIN_WITHIN_2X
                      or (bool(ttft) and summarise(ttft).median_error > MAX_TTFT_MEDIAN_ERROR))
    if not args.no_plot:
        plot(outcomes, args.plot)
        print(f"plot: {args.plot}")
    if verdict:
        print(f"{PROG} validate: out-of-source rows miss the bounds (median |error| <= "
              f"{MAX_MEDIAN_ERROR:.0%}, within 2x >= {MIN_WITHIN_2X:.0%}, TTFT median <= "
              f"{MAX_TTFT_MEDIAN_ERROR:.0%})", file=sys.stderr)
    return verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="The simulated inference engine.")
    add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not args.sim_command:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: choose a command: serve, info, validate, profile or opcheck", file=sys.stderr)
        return 2
    try:
        if args.sim_command == "validate":
            return _validate(args)
        if args.sim_command in ("profile", "opcheck"):
            return (profile_cli.profile if args.sim_command == "profile" else profile_cli.opcheck)(args)
        if args.sim_command == "serve":
            if not 0 < args.time_scale <= MAX_TIME_SCALE:  # nan and inf fail this too
                raise SimConfigError(f"--time-scale must be a finite number above 0 and at most "
                                     f"{MAX_TIME_SCALE:g}")
            if not 0 < args.port < 65536:
                raise SimConfigError(f"--port must be within 1..65535, got {args.port}")
        config = build_config(args)
        if args.sim_command == "info":
            print(json.dumps(config.summary(), indent=2))
            return 0
        return _serve(args, config)
    except CatalogError as exc:
        exc.report(sys.stderr)
        return 2
    except (SimConfigError, FaultError, TokenizerError, ProfileError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
