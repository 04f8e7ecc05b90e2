"""Agentic capacity results: capacity documents → records (kept in the store's ``agentic``
table, results/store.py).

One ``AgenticRecord`` per run × configuration × workload × runner × SLO tier (docs/agentic.md);
like every record it names its job, the job's fingerprint and the runner that measured it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..jsonio import loads_bounded, read_bounded

SCHEMA = "infermatrix-agentic-capacity"
AgenticKey = tuple[str, str, str, str, str]  # run, recipe, workload, runner, tier


class AgenticLevel(BaseModel):
    """One measured concurrency level, judged against the record's tier."""

    model_config = ConfigDict(extra="ignore")

    concurrency: int
    passed: bool
    reason: str = ""
    completed: int | None = None
    error_rate: float | None = None
    p25_output_speed: float | None = None
    p95_ttft_ms: float | None = None
    cached_token_ratio: float | None = None
    avg_power_w: float | None = None


class AgenticRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    run_id: str
    recipe: str
    job_id: str = ""
    fingerprint: str = ""
    runner: str = ""  # the fleet label that ran the search ('' for a search outside a job)
    finished_at: str | None = None
    model: str = ""
    hardware: str = ""
    engine: str = ""
    precision: str = ""
    mode: str = ""
    workload: str = "agentic"
    simulated: bool = False
    launcher: str = ""  # "virtual": played in virtual time (no server)
    time_scale: float = 1.0
    source: str = ""  # the session source (synthetic, trace, mooncake)
    tier: str
    min_output_speed: float | None = None
    max_ttft_s: float | None = None
    passing_concurrency: int = Field(ge=0)
    first_failing: int | None = None
    bounded: bool = True
    gpus: int | None = None
    agents_per_gpu: float | None = None
    avg_power_w: float | None = None
    agents_per_kw: float | None = None
    agents_per_mw: float | None = None
    usd_per_hour: float | None = None
    agents_per_usd_hour: float | None = None
    levels: list[AgenticLevel] = Field(default_factory=list)

    @property
    def key(self) -> AgenticKey:
        return (self.run_id, self.recipe, self.workload, self.runner, self.tier)


def is_capacity_document(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("schema") == SCHEMA


def records_from_document(doc: dict[str, Any]) -> list[AgenticRecord]:
    """One record per tier of a capacity document; ValueError when it is not one."""
    if not is_capacity_document(doc):
        raise ValueError(f"not an {SCHEMA} document")
    ident = doc.get("infermatrix") if isinstance(doc.get("infermatrix"), dict) else {}
    names = ("run_id", "job_id", "fingerprint", "runner", "finished_at", "model", "hardware",
             "engine", "precision", "mode", "workload", "simulated", "launcher", "time_scale")
    base = {k: ident[k] for k in names if ident.get(k) is not None}
    base.setdefault("run_id", "")
    base["recipe"] = ident.get("recipe") or doc.get("model_id") or doc.get("endpoint") or "?"
    base["source"] = str(doc.get("source") or "")
    out = []
    try:
        for entry in doc.get("tiers", []):
            tier = entry["tier"]
            levels = [AgenticLevel.model_validate({**lv, **lv["tiers"][tier["name"]]})
                      for lv in sorted(doc.get("levels", []), key=lambda lv: lv["concurrency"])
                      if tier["name"] in lv.get("tiers", {})]
            figures = {k: entry.get(k) for k in (
                "passing_concurrency", "first_failing", "bounded", "gpus", "agents_per_gpu",
                "avg_power_w", "agents_per_kw", "agents_per_mw", "usd_per_hour",
                "agents_per_usd_hour")}
            out.append(AgenticRecord.model_validate({
                **base, **figures, "tier": tier["name"], "levels": levels,
                "min_output_speed": tier.get("min_output_speed"),
                "max_ttft_s": tier.get("max_ttft_s")}))
    except (KeyError, TypeError, ValidationError) as exc:
        raise ValueError(f"unusable capacity document: {str(exc).splitlines()[0]}") from None
    return out


def load_documents(paths: Iterable[Path]) -> list[AgenticRecord]:
    """The records of every capacity document under ``paths``; other files are skipped."""
    out: list[AgenticRecord] = []
    for root in map(Path, paths):
        files = sorted(root.rglob("*.json")) if root.is_dir() else [root]
        for path in files:
            try:
                doc = loads_bounded(read_bounded(path))
                if is_capacity_document(doc):
                    out += records_from_document(doc)
            except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                continue
    return out


class AgenticTable(Protocol):
    """The store's agentic table (``results/store.py`` ``Store``), named by what is used of it:
    the store imports this module, so this module does not import the store."""

    def save_agentic(self, records: Sequence[AgenticRecord]) -> object: ...

    def agentic(self, runs: Iterable[str] | None = None) -> list[AgenticRecord]: ...


def save(store: AgenticTable, records: Sequence[AgenticRecord]) -> int:
    """Upsert ``records`` into the store (``Store.save_agentic``); returns how many were given."""
    store.save_agentic(records)
    return len(records)


def load(store: AgenticTable, runs: Iterable[str] | None = None) -> list[AgenticRecord]:
    """The store's agentic records (of ``runs`` when given): ``Store.agentic``."""
    return store.agentic(runs)


CONFIG = ("recipe", "hardware", "engine", "precision", "workload", "runner")
_ROW = ("run_id", "recipe", "model", "hardware", "engine", "precision", "mode", "workload",
        "runner", "simulated", "launcher", "time_scale", "source", "gpus")
_CELL = ("bounded", "first_failing", "agents_per_gpu", "avg_power_w", "agents_per_kw",
         "agents_per_mw", "usd_per_hour", "agents_per_usd_hour", "min_output_speed", "max_ttft_s")
_LEVEL = ("completed", "error_rate", "p25_output_speed", "p95_ttft_ms", "cached_token_ratio",
          "avg_power_w")


def tier_order(records: Iterable[AgenticRecord]) -> list[dict[str, Any]]:
    """Every tier once (its first thresholds seen), loosest first: by minimum output speed, then
    the longest TTFT allowed, then name."""
    tiers: dict[str, dict[str, Any]] = {}
    for r in records:
        tiers.setdefault(r.tier, {"name": r.tier, "min_output_speed": r.min_output_speed,
                                  "max_ttft_s": r.max_ttft_s})
    return sorted(tiers.values(), key=lambda t: (
        t["min_output_speed"] or 0.0, -(t["max_ttft_s"] or float("inf")), t["name"]))


def capacity_rows(records: Iterable[AgenticRecord]) -> list[dict[str, Any]]:
    """One row per run × configuration (recipe, hardware, engine, precision, workload, runner), with a
    cell per tier searched and the levels measured (shared by the tiers, each tier's verdict);
    ``latest`` marks each configuration's latest run. Sorted by configuration, then run."""
    rows: dict[tuple[str, ...], dict[str, Any]] = {}
    for r in sorted(records, key=lambda r: r.key):
        key = (*(getattr(r, k) for k in CONFIG), r.run_id)
        row = rows.get(key)
        if row is None:
            row = rows[key] = {**{k: getattr(r, k) for k in _ROW}, "usd_per_hour": r.usd_per_hour,
                               "tiers": {}, "levels": {}}
        row["tiers"][r.tier] = {"agents": r.passing_concurrency,
                                **{k: getattr(r, k) for k in _CELL}}
        for lv in r.levels:
            level = row["levels"].setdefault(lv.concurrency, {
                "concurrency": lv.concurrency, **{k: getattr(lv, k) for k in _LEVEL}, "tiers": {}})
            level["tiers"][r.tier] = {"passed": lv.passed, "reason": lv.reason}
    latest: dict[tuple[str, ...], str] = {}
    for key in rows:
        latest[key[:-1]] = max(latest.get(key[:-1], key[-1]), key[-1])
    out = []
    for key in sorted(rows):
        row = rows[key]
        row["latest"] = latest[key[:-1]] == key[-1]
        row["levels"] = [row["levels"][c] for c in sorted(row["levels"])]
        out.append(row)
    return out


def capacity_table(records: Iterable[AgenticRecord]) -> tuple[list[str], list[dict[str, Any]]]:
    """(tier names, one row per configuration): the latest run's passing concurrency per tier,
    with agents per GPU, per kW and per $/hour."""
    records = list(records)
    tiers = list(dict.fromkeys(r.tier for r in sorted(records, key=lambda r: r.run_id)))
    rows = [{**{k: row[k] for k in ("recipe", "model", "hardware", "engine", "precision",
                                    "workload", "run_id", "gpus")},
             "tiers": {name: {"agents": cell["agents"], "bounded": cell["bounded"],
                              "agents_per_gpu": cell["agents_per_gpu"],
                              "agents_per_kw": cell["agents_per_kw"],
                              "agents_per_usd_hour": cell["agents_per_usd_hour"]}
                       for name, cell in row["tiers"].items()}}
            for row in capacity_rows(records) if row["latest"]]
    return tiers, rows
