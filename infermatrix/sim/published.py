"""The published-results table (infermatrix/sim/data/published.yaml): one row per published
number, each with its source; the row's schema, the loader (``file:line`` problems), and the
split by source that keeps the report rows out of the calibration.

``calibrate`` rows were used to fit the efficiency tables, ``report`` rows never were, so only
they measure the model. The built-in table is split by source (no report row shares a page or a
setup with a calibrate row); for any table the headline is ``out_of_source``: the report rows
that share neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ..catalog.loader import _validation_problems  # noqa: PLC2701
from ..catalog.schema import Parallel
from ..catalog.yamlsrc import CatalogError, load_yaml
from .names import engine_name, metric_name, parallel_spec
from .tables import DATA_DIR, written_version

PUBLISHED_FILE = DATA_DIR / "published.yaml"
Metric = Literal["output_tps_per_gpu", "total_tps_per_gpu", "output_tps", "tpot_ms", "ttft_ms",
                 "e2e_latency_ms", "itl_ms", "output_tps_per_user", "agents_per_gpu"]
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
    ``isl`` and ``osl`` are the means (the printed totals / requests); see
    ``published_requests.sharegpt_lengths``"""
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


# ------------------------------------------------------------------ splits that cannot leak


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

