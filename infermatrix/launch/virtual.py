"""Virtual time: a job measured by the simulated engine's discrete-event kernel.

No server starts and nothing sleeps: each level's requests (the workload's lengths, drawn as the
client draws them) are played through ``sim.simulate`` with the level's concurrency cap, turned
into the client's request records, and summarised by the client's own metrics and result code —
so a virtual result has exactly the schema of a real run. Its ``infermatrix`` block says
``simulated: true`` and ``launcher: "virtual"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..catalog.loader import Catalog
from ..plan.jobs import Job, conc_params
from .job import bench_config

if TYPE_CHECKING:  # the client and the simulator are imported late, when a level runs
    from ..client.config import BenchConfig
    from ..sim import SimConfig, SimRun

LAUNCHER = "virtual"


@dataclass
class SimulatedLevel:
    """A level played through the simulated engine, before the client's metrics."""

    bench: BenchConfig
    sim: SimConfig
    run: SimRun


def simulate_level(cat: Catalog, job: Job, conc: int, *, stepwise: bool = False) -> SimulatedLevel:
    """Play one level of ``job`` in virtual time: the lengths the client's random dataset
    draws, in its order, at the level's concurrency. ``stepwise`` applies the engine's steps
    one at a time instead of in decode phases (the reference the fast path is tested against;
    much slower)."""
    from ..client.datasets import draw_len, rngs  # the client stays independent: import late
    from ..sim import SimConfig, SimRequest, simulate

    cfg = bench_config(cat, job, conc, base_url=f"virtual://{job.recipe}").model_copy(
        update={"num_warmups": 0})  # a simulated engine has nothing to warm up
    lengths, _, _ = rngs(cfg.seed)
    requests = []
    in_range, out_range = (cfg.length_range(n) for n in (cfg.random_input_len,
                                                          cfg.random_output_len))
    for _ in range(cfg.num_prompts):
        isl = draw_len(lengths, cfg.random_input_len, cfg.ratio, in_range)
        requests.append(SimRequest(isl, draw_len(lengths, cfg.random_output_len, cfg.ratio,
                                                 out_range)))
    sim = SimConfig.from_recipe(cat, job.recipe, params=conc_params(job, conc))
    return SimulatedLevel(cfg, sim, simulate(sim, requests, concurrency=conc,
                                             streaks=not stepwise))


def level_result(level: SimulatedLevel) -> dict[str, Any]:
    """The client's result dict (bench_serving keys and ours) of a simulated level."""
    from ..client.metrics import compute
    from ..client.records import RequestRecord
    from ..client.result import build_result
    from ..client.tokenizer import load_tokenizer

    cfg, run = level.bench, level.run
    records = []
    # the simulated text is one word per token, so its re-tokenized length is the token count
    # and no text need be made (the metrics read only the counts, one token per event)
    retokenized = []
    for res in run.results:
        rec = RequestRecord(index=res.index, prompt_len=res.prompt_tokens,
                            output_len_requested=res.max_tokens, start=res.sent_at,
                            dispatched=0.0, deadline=0.0,
                            end=res.finished_at if res.finished_at is not None else res.sent_at)
        if res.error is not None:
            rec.error, rec.error_detail = "rejected", res.error
        elif res.completion_tokens:
            rec.event_times = res.token_times  # a numpy array: the metrics take it as is
            retokenized.append(len(rec.event_times))
            rec.usage_completion_tokens = res.completion_tokens
            rec.usage_prompt_tokens = res.prompt_tokens
        else:
            rec.error = "empty_output"
        records.append(rec)
    t0 = min((r.sent_at for r in run.results), default=0.0)
    t_end = max((r.end for r in records), default=t0)
    tok = load_tokenizer("words")
    metrics = compute(records, t0, t_end, tok, cfg.metric_percentiles, cfg.percentile_metrics,
                      cfg.goodput, retokenized=retokenized)
    result = build_result(cfg, level.sim.served_model_name, tok.name, metrics,
                          notes=[f"virtual time: {run.steps} engine steps simulated in "
                                 f"{run.wall_seconds:.2f} s of wall time"])
    result["sim_preemptions"] = run.preemptions
    return result


def measure_level(cat: Catalog, job: Job, conc: int, *, stepwise: bool = False) -> dict[str, Any]:
    """One level in virtual time → the client's result dict (see simulate_level)."""
    return level_result(simulate_level(cat, job, conc, stepwise=stepwise))


# the record of a level's run, not of what it measured: when it ran, how long simulating took
NOT_MEASURED = frozenset({"date", "timestamp_utc", "notes"})


def result_numbers(result: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Every number a level's result measured, by dotted key (to compare two results)."""
    out: dict[str, float] = {}
    for key, value in result.items():
        if key in NOT_MEASURED:
            continue
        if isinstance(value, dict):
            out.update(result_numbers(value, f"{prefix}{key}."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[prefix + key] = float(value)
    return out
