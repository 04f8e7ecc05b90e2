"""`infermatrix sim validate`: the simulator against published results.

Simulates every row of the published table (published.py) in virtual time: the row's
deployment, its client's requests (published_requests.py), the metric read as its source read
it, compared with the published number (validate_score.py); validate_report.py prints and
draws the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..catalog.loader import Catalog
from ..catalog.yamlsrc import CatalogError
from .config import SimConfig
from .published import PublishedRow, load_published, out_of_source, setup_key
from .published_requests import row_arrivals, row_lengths
from .tables import default_tables, release
from .validate_score import SKIPPED, Outcome, per_kind, summarise
from .virtual import SimRequest, SimRun, simulate, statistic

# the table, its split and the summaries, re-exported: scripts outside the package measure the
# simulator through this one module (``from infermatrix.sim import validate as v``)
__all__ = ["CapacityFn", "Outcome", "capacity_runner", "load_published", "out_of_source",
           "per_kind", "run_rows", "setup_key", "sim_config", "summarise"]

# latency metrics: the simulated request attribute (seconds) each is read from, and per-user
# speed is 1 / TPOT
_LATENCY = {"tpot_ms": "tpot", "ttft_ms": "ttft", "e2e_latency_ms": "e2el",
            "output_tps_per_user": "tpot"}


def sim_config(cat: Catalog, row: PublishedRow) -> SimConfig:
    knobs = dict(row.knobs)
    if release(row.engine_version) is not None:  # the published run's build, over a recipe's
        knobs["engine_version"] = row.engine_version
    if row.recipe:
        return SimConfig.from_recipe(cat, row.recipe, dataset=row.dataset, **knobs)
    par = row.parallel
    assert par is not None
    draft = knobs.pop("spec_draft_tokens", 0)
    method = knobs.pop("spec_method", None)
    acceptance = default_tables().acceptance_rate(method, row.dataset) if draft else None
    return SimConfig.from_parts(
        cat, row.hardware, row.model, row.precision, tp=par.tp, pp=par.pp, dp=par.dp, ep=par.ep,
        attention_dp=par.attention_dp, engine=row.engine, spec_draft_tokens=draft,
        spec_acceptance=acceptance, offline=row.concurrency is None and row.request_rate is None,
        **knobs)


def _throughput_like(row: PublishedRow, cfg: SimConfig) -> float:
    assert row.isl and row.osl
    n = row.requests or (4 * row.concurrency if row.concurrency else 1000)
    lengths = row_lengths(row, n)
    run = simulate(cfg, [SimRequest(isl, osl, arrival=t)
                         for (isl, osl), t in zip(lengths, row_arrivals(row, n), strict=True)],
                   concurrency=row.concurrency, record_token_times=row.metric == "itl_ms")
    failed = [r.error for r in run.results if r.error]
    if failed:
        raise ValueError(f"{len(failed)} requests failed: {failed[0]}")
    if row.metric == "output_tps_per_gpu":
        return run.output_throughput / cfg.total_gpus
    if row.metric == "output_tps":
        return run.output_throughput
    if row.metric == "total_tps_per_gpu":  # prompt + output tokens
        prompt, output = (sum(x) for x in zip(*lengths, strict=True))
        return run.output_throughput * (prompt + output) / output / cfg.total_gpus
    if row.metric == "itl_ms":
        gaps = _event_gaps(run)
        if not gaps.size:
            raise ValueError("no inter-token gaps: every request streamed its output at once")
        return statistic(gaps, row.statistic) * 1000.0
    stat = row.statistic
    if row.metric == "output_tps_per_user" and stat.startswith("p"):
        stat = f"p{100 - float(stat[1:]):g}"  # the pNN speed is the p(100-NN) TPOT
    value = statistic(run.values(_LATENCY[row.metric]), stat)
    return 1.0 / value if row.metric == "output_tps_per_user" else value * 1000.0


def _event_gaps(run: SimRun) -> np.ndarray:
    """bench_serving's inter-token latencies: per request, the gaps between successive
    streamed events (tokens sent together are one event), pooled over the requests."""
    gaps = []
    for r in run.results:
        steps = np.diff(np.asarray(r.token_times, dtype=np.float64))
        gaps.append(steps[steps > 0])
    return np.concatenate(gaps) if gaps else np.zeros(0)


# agents_per_gpu(cat, row) -> agents per GPU
CapacityFn = Callable[[Catalog, PublishedRow], float]


def capacity_runner(search: Callable[..., dict[str, Any]],
                    log: Callable[[str], None] | None = None) -> CapacityFn:
    """agents/GPU rows through an agentic capacity search in virtual time: ``search`` is
    ``infermatrix.capacity.virtual.virtual_capacity`` (cat, recipe_id, workload, log=...) ->
    capacity document. The caller passes it in: the simulator does not import the capacity
    layer (which uses the benchmark client). One search serves every tier of a recipe."""
    docs: dict[tuple[str, str], dict[str, Any]] = {}

    def run(cat: Catalog, row: PublishedRow) -> float:
        assert row.recipe and row.workload
        key = (row.recipe, row.workload)
        if key not in docs:
            docs[key] = search(cat, row.recipe, row.workload, log=log)
        return _agents_per_gpu(docs[key], row.tier or "")

    return run


def _agents_per_gpu(doc: dict[str, Any], tier: str) -> float:
    """agents/GPU of one tier in a capacity document."""
    for t in doc.get("tiers", []):
        if t.get("tier", {}).get("name") == tier and t.get("agents_per_gpu") is not None:
            return float(t["agents_per_gpu"])
    raise ValueError(f"capacity search gave no agents/GPU for tier {tier}")


def run_rows(cat: Catalog, rows: Sequence[PublishedRow],
             progress: Callable[[Outcome], None] | None = None,
             capacity: CapacityFn | None = None) -> list[Outcome]:
    """Simulate every row. agents/GPU rows need ``capacity`` (see capacity_runner); without
    it they are skipped and stay out of the summary."""
    out = []
    for row in rows:
        try:
            if row.metric == "agents_per_gpu":
                if capacity is None:
                    outcome = Outcome(row, None, SKIPPED + " (needs an agentic capacity search)")
                else:
                    outcome = Outcome(row, capacity(cat, row))
            else:
                outcome = Outcome(row, _throughput_like(row, sim_config(cat, row)))
        except (ValueError, CatalogError) as exc:  # SimConfigError is a ValueError
            outcome = Outcome(row, None, str(exc).splitlines()[0])
        out.append(outcome)
        if progress:
            progress(outcome)
    return out
