"""``--dataset-name multi-turn``: one benchmark run of closed-loop agent sessions, as a
bench_serving-compatible result with an ``agentic`` block."""

from __future__ import annotations

import math
import secrets
from time import perf_counter
from typing import Any

from . import eventloop
from .affinity import parse as parse_affinity
from .config import BenchConfig
from .errors import ClientInputError
from .level_records import LevelPlan
from .level_summary import level_result
from .metrics import compute, per_request_details
from .progress import Progress
from .request import make_client
from .result import build_result
from .runner import resolve_model, run_tokenizer, tokenizer_notes
from .session_sources import SessionOptions, load_source
from .sessions import run_level


async def run_multi_turn(cfg: BenchConfig, opts: SessionOptions | None = None) -> dict[str, Any]:
    """``--dataset-name multi-turn``: one closed-loop level of ``max_concurrency`` agents. The
    result is the bench_serving-compatible JSON of the measured requests (same metrics code as
    every other dataset) plus an ``agentic`` block (output speed, cached tokens, sessions).
    ``opts`` defaults to ``cfg.sessions``."""
    opts = opts or cfg.sessions or SessionOptions()
    tok = run_tokenizer(cfg) if cfg.tokenizer or cfg.model else None
    model = None
    if tok is None:  # the tokenizer is the served model's: ask the server first
        async with make_client(cfg.timeouts) as client:
            model = await resolve_model(client, cfg)
        tok = run_tokenizer(cfg, model)
    kind = opts.kind(cfg.dataset_path)
    source = load_source(
        kind,
        tok,
        path=cfg.dataset_path,
        synthetic=opts.synthetic,
        block_size=cfg.trace_block_size,
        tool_delay_s=opts.tool_delay_s,
        seed=cfg.seed,
    )
    if opts.output == "exact" and not cfg.ignore_eos:
        cfg = cfg.model_copy(update={"ignore_eos": True})
    plan = LevelPlan(
        agents=cfg.max_concurrency or 1,
        duration_s=opts.duration_s,
        warmup_s=opts.warmup_s,
        mid_session=opts.mid_session and not opts.replay_once,  # once = from turn 0
        salt=f"x{secrets.token_hex(3)}",
        seed=cfg.seed,
        max_context_tokens=opts.max_context_tokens,
        replay_once=opts.replay_once,
        time_scale=opts.time_scale,
    )
    # the window's seconds (warm-up + measured); a replay runs until its sessions end instead
    progress = Progress(math.ceil(plan.warmup_s + plan.duration_s),
                        enabled=not (cfg.disable_tqdm or opts.replay_once), by_time=True)
    progress.start(perf_counter())
    try:
        out = await run_level(cfg, source, plan, parse_affinity(opts.affinity), tok=tok,
                              model=model, on_done=progress.done)
    finally:
        progress.close()
    measured = [r for r, t in zip(out.records, out.turns, strict=True) if t.measured]
    if not measured:
        raise ClientInputError(
            "no request was measured: lengthen the session duration or shorten the warm-up"
        )
    metrics = compute(
        measured,
        out.t_measure,
        out.t_end,
        tok,
        cfg.metric_percentiles,
        cfg.percentile_metrics,
        cfg.goodput,
    )
    details = per_request_details(measured, tok) if cfg.save_detailed else None
    result = build_result(
        cfg.model_copy(update={"max_concurrency": plan.agents}),  # the agents: never unset
        out.model,
        tok.name,
        metrics,
        details,
        notes=tokenizer_notes(tok),
        window=(out.t_measure, out.t_end),
    )
    result["agentic"] = level_result(out, with_turns=cfg.save_detailed)
    return result


def run_multi_turn_sync(cfg: BenchConfig, opts: SessionOptions | None = None) -> dict[str, Any]:
    return eventloop.run(run_multi_turn(cfg, opts))
