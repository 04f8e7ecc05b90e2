"""`infermatrix sim validate`: the simulator against published results.

Reads infermatrix/sim/data/published.yaml (one row per published number, each with its source),
simulates every row in virtual time and compares: error = simulated / published − 1. The summary
(median |error|, share within 20% and within 2×) is given per split: ``calibrate`` rows were used
to fit the efficiency tables, ``report`` rows never were, so only they measure the model. The
built-in table is split by source (no report row shares a page or a setup with a calibrate row);
for any table the headline is ``out_of_source``: the report rows that share neither.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ..catalog.loader import Catalog, _validation_problems  # noqa: PLC2701
from ..catalog.schema import Parallel
from ..catalog.yamlsrc import CatalogError, load_yaml
from .config import SimConfig
from .names import engine_name, metric_name, parallel_spec
from .tables import DATA_DIR, default_tables, release, written_version
from .virtual import SimRequest, SimRun, simulate, statistic

PUBLISHED_FILE = DATA_DIR / "published.yaml"
Metric = Literal["output_tps_per_gpu", "total_tps_per_gpu", "output_tps", "tpot_ms", "ttft_ms",
                 "e2e_latency_ms", "itl_ms", "output_tps_per_user", "agents_per_gpu"]
# latency metrics: the simulated request attribute (seconds) each is read from, and per-user
# speed is 1 / TPOT
_LATENCY = {"tpot_ms": "tpot", "ttft_ms": "ttft", "e2e_latency_ms": "e2el",
            "output_tps_per_user": "tpot"}
SPLITS = ("calibrate", "report")


def _engine(value: Any) -> Any:
    return (engine_name(value) or value) if isinstance(value, str) else value


def _parallel(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    spec = parallel_spec(value)
    if spec is None:
        raise ValueError(f"parallelism {value!r} not understood: write it as a page does (TP8, "
                         "TP8 EP8, DEP8, TP=4 DP=2 EP=4, TP4 + attention-DP) or as fields "
                         "({tp: 8, ep: 8})")
    return spec


class PublishedRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    split: Literal["calibrate", "report"] = "report"
    """a row nothing was fitted on is a report row: the default, for a table from elsewhere"""
    source: Annotated[str, Field(pattern=r"^https?://")]
    note: str = ""
    hardware: str
    model: str
    engine: Annotated[Literal["vllm", "sglang", "trtllm"], BeforeValidator(_engine)]
    """as the source spells it: "TensorRT-LLM", "SGLang", "vLLM" …"""
    engine_version: Annotated[str, BeforeValidator(written_version)] = "unstated"
    precision: str
    recipe: str | None = None
    parallel: Annotated[Parallel | None, BeforeValidator(_parallel)] = None
    """fields, or as a page writes it: "TP8 EP8", "DEP16", "TP=4 DP=2 EP=4" (names.parallel_spec)"""
    knobs: dict[str, Any] = Field(default_factory=dict)
    isl: Annotated[int, Field(ge=1)] | None = None
    osl: Annotated[int, Field(ge=1)] | None = None
    concurrency: Annotated[int, Field(ge=1)] | None = None
    """closed-loop cap; none (and no request_rate): every request sent at once (offline)"""
    request_rate: Annotated[float, Field(ge=1e-6, le=1e6)] | None = None
    """requests a second, sent as bench_serving's --request-rate sends them (gamma-distributed
    gaps, Poisson at burstiness 1), under ``concurrency`` too where it is given"""
    burstiness: Annotated[float, Field(ge=1e-3, le=1e3)] = 1.0
    """bench_serving's --burstiness: the gaps' gamma shape (1: Poisson; below 1: burstier)"""
    requests: Annotated[int, Field(ge=1, le=100_000)] | None = None
    range_ratio: Annotated[float, Field(ge=0, le=1)] | None = None
    """bench_serving's --random-range-ratio as SGLang's client and InferenceX's draw it: each
    request's prompt and output lengths uniform between ratio × L and L, L the nominal length.
    ``isl`` and ``osl`` stay the means, so L = 2 × mean / (1 + ratio). None: every request at
    ``isl`` / ``osl``, as fixed-length tables (and ratio 1) run them"""
    lengths: Literal["sharegpt", "sharegpt-sglang"] | None = None
    """the row's client sampled ShareGPT conversations, whose lengths vary request by request:
    "sharegpt" as ``vllm bench serve`` (and older copies of bench_serving) keeps them (prompt and
    reply of at least 4 tokens, a prompt of at most 1,024, both together at most 2,048),
    "sharegpt-sglang" as SGLang's bench_serving keeps them (at least 2 tokens each, no cap).
    ``isl`` and ``osl`` are the means (the printed totals / requests); see ``_sharegpt``"""
    dataset: str = "random"
    workload: str | None = None
    tier: str | None = None
    metric: Metric
    statistic: Literal["median", "mean", "p90", "p95", "p99"] = "median"
    """for latency metrics (TPOT, TTFT, E2E, per-user speed): over the requests (percentiles
    interpolated as bench_serving's numpy percentiles are)"""
    value: Annotated[float, Field(gt=0)]
    bound: Literal["at_most", "at_least"] | None = None
    """the source states a bound, not a point (a test's assertion: "mean TPOT <= 109 ms"): the
    row is met (error 0) when the simulated value is on the bound's side, else off by the
    distance to it"""

    @model_validator(mode="before")
    @classmethod
    def _metric_as_clients_name_it(cls, data: Any) -> Any:
        """"median_tpot_ms", "mean_ttft_ms", "output_tput_per_gpu" (bench_serving's and
        InferenceX's names) read as the table's metric and statistic; InferenceX's latencies
        without "_ms" ("median_tpot") are seconds, as its agg files write them."""
        if not isinstance(data, dict) or not isinstance(data.get("metric"), str):
            return data
        named = metric_name(data["metric"], get_args(Metric))
        if named is None:
            return data
        metric, stat, factor = named
        data = {**data, "metric": metric}
        if factor != 1.0 and isinstance(data.get("value"), (int, float)):
            data["value"] = data["value"] * factor
        if stat and "statistic" not in data:
            data["statistic"] = stat
        return data


def load_published(path: Path | str = PUBLISHED_FILE) -> list[PublishedRow]:
    """The published-results table; CatalogError with file:line problems when it is wrong."""
    doc = load_yaml(path)
    if not isinstance(doc.data, list):
        raise CatalogError([doc.problem((), "expected a list of published results")])
    rows, problems, seen = [], [], set()
    for i, raw in enumerate(doc.data):
        try:
            row = PublishedRow.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_validation_problems(doc, exc, (i,)))
            continue
        if row.id in seen:
            problems.append(doc.problem((i, "id"), f"duplicate id {row.id!r}"))
        if (row.recipe is None) == (row.parallel is None):
            problems.append(doc.problem((i,), "give either recipe or parallel"))
        if row.metric == "agents_per_gpu" and not (row.workload and row.tier):
            problems.append(doc.problem((i,), "agents_per_gpu needs workload and tier"))
        if row.metric != "agents_per_gpu" and not (row.isl and row.osl):
            problems.append(doc.problem((i,), f"{row.metric} needs isl and osl"))
        if row.lengths and row.range_ratio is not None:
            problems.append(doc.problem((i, "lengths"), "give lengths or range_ratio, not both"))
        seen.add(row.id)
        rows.append(row)
    if problems:
        raise CatalogError(problems)
    return rows


@dataclass
class Outcome:
    row: PublishedRow
    simulated: float | None
    detail: str = ""

    @property
    def error(self) -> float | None:
        """simulated / published − 1 (positive: the simulator is too optimistic for
        throughput-like metrics, too pessimistic for latencies: TPOT, TTFT, E2E, ITL); for a
        bound, 0 when the simulated value meets it."""
        if self.simulated is None:
            return None
        err = self.simulated / self.row.value - 1.0
        if (self.row.bound == "at_most" and err <= 0) or (self.row.bound == "at_least" and err >= 0):
            return 0.0
        return err

    @property
    def ratio(self) -> float | None:
        """max(sim/pub, pub/sim): 1 is exact (or a bound met), 2 is off by 2×."""
        if not self.simulated:
            return None
        r = 1.0 + (self.error or 0.0)
        return max(r, 1.0 / r)


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


def _arrivals(row: PublishedRow, n: int) -> list[float]:
    """Send times of a row's ``n`` requests: all at 0, or at ``request_rate`` with gamma gaps
    of shape ``burstiness`` (mean 1 / rate), seeded, the first sent at once."""
    if row.request_rate is None:
        return [0.0] * n
    rng = np.random.default_rng(0)
    gaps = rng.gamma(row.burstiness, 1.0 / (row.request_rate * row.burstiness), n - 1)
    return [0.0, *np.cumsum(gaps).tolist()]


def _lengths(row: PublishedRow, n: int) -> list[tuple[int, int]]:
    """(prompt, output) tokens of a row's ``n`` requests: the row's own, or drawn as its
    ``range_ratio`` says (seeded, so a row always simulates the same requests). The interval
    is the client's (``client.datasets.draw_len``), found from the mean; the simulator may not
    import the client (tests/test_import_rules.py)."""
    assert row.isl and row.osl
    if row.lengths:
        return _sharegpt(row.isl, row.osl, n, trimmed=row.lengths == "sharegpt")
    if row.range_ratio is None:
        return [(row.isl, row.osl)] * n
    rng = np.random.default_rng(1)

    def draw(mean: int) -> list[int]:
        top = max(1, round(2 * mean / (1 + row.range_ratio)))
        low = max(1, min(top, round(row.range_ratio * top)))
        return rng.integers(low, top, n, endpoint=True).tolist()

    return list(zip(draw(row.isl), draw(row.osl), strict=True))


def _sharegpt(isl: int, osl: int, n: int, *, trimmed: bool) -> list[tuple[int, int]]:
    """``n`` (prompt, reply) lengths standing in for a ShareGPT sample, seeded, whose means are
    ``isl`` and ``osl``. The file cannot be read here, so each length is drawn from the
    exponential distribution (the least presumptuous one with a given positive mean) and the
    pairs the client would drop are dropped (``trimmed``: vLLM's filter, else SGLang's: the
    rule ``client.datasets.sharegpt_keeps`` applies to a real file, restated here because the
    simulator may not import the client); the scales are then corrected until the kept pairs'
    means match. What matters is the spread: a batch of requests sent at once is done only
    when its longest reply is, so a run of ShareGPT requests takes several times as long as
    the same tokens at their mean lengths."""
    scale_in, scale_out = float(isl), float(osl)
    low = 4 if trimmed else 2
    for _ in range(8):  # the filter shortens the means: rescale and draw again
        rng = np.random.default_rng(2)  # seeded: a row always simulates the same requests
        pairs = np.rint(rng.exponential((scale_in, scale_out), (4 * n + 64, 2)))
        ok = (pairs >= low).all(axis=1)
        if trimmed:
            ok &= (pairs[:, 0] <= 1024) & (pairs.sum(axis=1) <= 2048)
        kept = pairs[ok][:n]
        if len(kept) < n:
            kept_by = ("4..1,024-token prompts, pairs up to 2,048" if trimmed
                       else "2 tokens or more each")
            raise ValueError(f"cannot draw {n} ShareGPT-like requests of means {isl}/{osl} "
                             f"that the client keeps ({kept_by})")
        mean_in, mean_out = kept.mean(axis=0)
        if abs(mean_in / isl - 1) < 0.005 and abs(mean_out / osl - 1) < 0.005:
            break
        scale_in *= isl / mean_in
        scale_out *= osl / mean_out
    return [(int(a), int(b)) for a, b in kept]


def _throughput_like(row: PublishedRow, cfg: SimConfig) -> float:
    assert row.isl and row.osl
    n = row.requests or (4 * row.concurrency if row.concurrency else 1000)
    lengths = _lengths(row, n)
    run = simulate(cfg, [SimRequest(isl, osl, arrival=t)
                         for (isl, osl), t in zip(lengths, _arrivals(row, n), strict=True)],
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
SKIPPED = "skipped"


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


@dataclass(frozen=True)
class Summary:
    rows: int
    simulated: int
    median_error: float  # median |sim/pub − 1|
    within_20: float  # share of rows with |error| ≤ 20%
    within_2x: float  # share within a factor of 2
    median_signed: float  # median sim/pub − 1: the bias

    def line(self, name: str) -> str:
        if not self.simulated:
            return f"{name}: no rows simulated ({self.rows} rows)"
        return (f"{name}: {self.simulated}/{self.rows} rows simulated, median |error| "
                f"{self.median_error:.0%}, within 20%: {self.within_20:.0%}, within 2x: "
                f"{self.within_2x:.0%}, bias {self.median_signed:+.0%}")


def summarise(outcomes: Sequence[Outcome]) -> Summary:
    """Rows that could not be simulated count as misses in the shares; skipped rows do not
    count."""
    outcomes = [o for o in outcomes if not o.detail.startswith(SKIPPED)]
    errs = [o.error for o in outcomes if o.error is not None]
    ratios = [o.ratio for o in outcomes if o.ratio is not None]
    n = len(outcomes)
    if not errs:
        return Summary(n, 0, math.inf, 0.0, 0.0, 0.0)
    return Summary(
        rows=n, simulated=len(errs),
        median_error=statistics.median(abs(e) for e in errs),
        within_20=sum(1 for e in errs if abs(e) <= 0.2) / n,
        within_2x=sum(1 for r in ratios if r <= 2.0) / n,
        median_signed=statistics.median(errs),
    )


# ------------------------------------------------------------------ splits that cannot leak
# What each metric measures, for the per-kind figures.
KINDS = {"throughput": ("output_tps_per_gpu", "total_tps_per_gpu", "output_tps"),
         "TPOT": ("tpot_ms", "itl_ms", "output_tps_per_user"), "TTFT": ("ttft_ms",),
         "E2E latency": ("e2e_latency_ms",), "agents/GPU": ("agents_per_gpu",)}


def source_key(row: PublishedRow) -> str:
    """The page a row comes from: its URL without fragment, query or trailing slash (the rows
    of one page are one source, whatever anchor they cite)."""
    url = urlsplit(row.source)
    return f"{url.netloc.lower()}{url.path.rstrip('/')}"


def setup_key(row: PublishedRow) -> tuple[Any, ...]:
    """What was run, whoever published it: two rows alike here measured the same setup
    (MLPerf's Llama 2 70B on 8x MI300X by AMD and by Dell), whatever the metric."""
    par = row.parallel.model_dump_json() if row.parallel else None
    return (row.hardware, row.model, row.engine, row.precision, row.recipe, par, row.isl,
            row.osl, row.concurrency, row.request_rate, row.dataset, row.workload, row.tier)


def out_of_source(rows: Sequence[PublishedRow],
                  table: Sequence[PublishedRow] | None = None) -> list[PublishedRow]:
    """The report rows of ``rows`` that share neither a source nor a setup with any
    calibrate row of ``table`` (default: ``rows``): what the model was never shown anything
    of, the headline (leave-one-source-out: each of its sources was left out of the
    calibration whole)."""
    cal = [r for r in (rows if table is None else table) if r.split == "calibrate"]
    sources, setups = {source_key(r) for r in cal}, {setup_key(r) for r in cal}
    return [r for r in rows if r.split == "report" and source_key(r) not in sources
            and setup_key(r) not in setups]


def per_kind(outcomes: Sequence[Outcome]) -> dict[str, Summary]:
    """The summary of each kind of metric (throughput, TPOT, TTFT, ...) with rows."""
    out = {}
    for kind, metrics in KINDS.items():
        part = [o for o in outcomes if o.row.metric in metrics]
        if part:
            out[kind] = summarise(part)
    return out


def per_source_median(outcomes: Sequence[Outcome]) -> float:
    """The median over sources of each source's median |error|: every left-out source weighs
    the same, however many rows it has."""
    by: dict[str, list[float]] = {}
    for o in outcomes:
        if o.error is not None:
            by.setdefault(source_key(o.row), []).append(abs(o.error))
    return statistics.median(statistics.median(v) for v in by.values()) if by else math.inf


def headline_lines(outcomes: Sequence[Outcome], table: Sequence[PublishedRow]) -> list[str]:
    """The calibrate and report summaries, then the out-of-source headline by kind
    (out of the sources of ``table``'s calibrate rows)."""
    oos_ids = {r.id for r in out_of_source([o.row for o in outcomes], table)}
    lines = []
    for split in SPLITS:
        part = [o for o in outcomes if o.row.split == split]
        if part:
            lines.append(summarise(part).line(split))
    inside = [o for o in outcomes if o.row.split == "report" and o.row.id not in oos_ids]
    if inside:
        lines.append(summarise(inside).line("report rows sharing a source or setup with "
                                            "calibrate rows (not a test of the model)"))
    oos = [o for o in outcomes if o.row.id in oos_ids]
    if oos:
        sources = len({source_key(o.row) for o in oos})
        lines.append(summarise(oos).line(f"OUT-OF-SOURCE ({sources} sources never calibrated on)"))
        lines.append(f"  leave-one-source-out: median of the {sources} sources' median |error|: "
                     f"{per_source_median(oos):.0%}")
        lines += [f"  {s.line(kind)}" for kind, s in per_kind(oos).items()]
    return lines


def format_outcome(o: Outcome) -> str:
    r = o.row
    sim = "—" if o.simulated is None else f"{o.simulated:,.4g}"
    err = o.detail if o.error is None else f"{o.error:+.0%}"
    if r.bound and o.error is not None:
        side = "<=" if r.bound == "at_most" else ">="
        err = f"{'met' if o.error == 0 else err} (bound: {side} {r.value:,.4g})"
    return f"{r.split:9s} {r.id:46s} {r.metric:19s} {r.value:>10,.4g} {sim:>10s}  {err}"


def plot(outcomes: Sequence[Outcome], path: Path) -> None:
    """Published vs simulated, log-log, with the 2× band; marked as simulated."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 6))
    pts = [o for o in outcomes if o.simulated]
    for split, marker in (("calibrate", "o"), ("report", "s")):
        xs = [o.row.value for o in pts if o.row.split == split]
        ys = [o.simulated for o in pts if o.row.split == split]
        ax.scatter(xs, ys, marker=marker, label=f"{split} ({len(xs)})", alpha=0.75)
    if pts:
        lo = min(min(o.row.value, o.simulated or 1) for o in pts) / 2
        hi = max(max(o.row.value, o.simulated or 1) for o in pts) * 2
        ax.plot([lo, hi], [lo, hi], "k-", lw=1)
        ax.plot([lo, hi], [2 * lo, 2 * hi], "k:", lw=0.8)
        ax.plot([lo, hi], [lo / 2, hi / 2], "k:", lw=0.8)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("published")
    ax.set_ylabel("simulated")
    ax.set_title("infermatrix sim validate: published vs SIMULATED (dotted: 2x)")
    ax.text(0.98, 0.02, "SIMULATED", transform=ax.transAxes, ha="right", va="bottom",
            fontsize=18, color="red", alpha=0.35, fontweight="bold")
    ax.legend(loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
