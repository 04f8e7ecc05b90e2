"""Agentic capacity results: capacity documents → records → the store's ``agentic`` table.

One ``AgenticRecord`` per run × configuration × workload × SLO tier (docs/agentic.md). The table
is created on first use, so a store written before agentic records existed keeps working.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from .store import Store

SCHEMA = "infermatrix-agentic-capacity"
_TABLE = """
CREATE TABLE IF NOT EXISTS agentic (
    run_id TEXT NOT NULL, recipe TEXT NOT NULL, workload TEXT NOT NULL, tier TEXT NOT NULL,
    passing_concurrency INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run_id, recipe, workload, tier)
)
"""


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
    model: str = ""
    hardware: str = ""
    engine: str = ""
    precision: str = ""
    mode: str = ""
    workload: str = "agentic"
    simulated: bool = False
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
    def key(self) -> tuple[str, str, str, str]:
        return (self.run_id, self.recipe, self.workload, self.tier)


def is_capacity_document(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("schema") == SCHEMA


def records_from_document(doc: dict[str, Any]) -> list[AgenticRecord]:
    """One record per tier of a capacity document; ValueError when it is not one."""
    if not is_capacity_document(doc):
        raise ValueError(f"not an {SCHEMA} document")
    ident = doc.get("infermatrix") if isinstance(doc.get("infermatrix"), dict) else {}
    names = ("run_id", "model", "hardware", "engine", "precision", "mode", "workload", "simulated",
             "time_scale")
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
                doc = json.loads(path.read_text(encoding="utf-8"))
                if is_capacity_document(doc):
                    out += records_from_document(doc)
            except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                continue
    return out


def save(store: Store, records: Sequence[AgenticRecord]) -> int:
    """Upsert ``records`` into the store's agentic table; returns how many were given."""
    con = store.con
    con.execute(_TABLE)
    rows = [(*r.key, r.passing_concurrency, r.model_dump_json()) for r in records]
    con.execute("BEGIN IMMEDIATE")
    try:
        con.executemany("INSERT OR REPLACE INTO agentic VALUES (?, ?, ?, ?, ?, ?)", rows)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return len(rows)


def load(store: Store) -> list[AgenticRecord]:
    con = store.con
    con.execute(_TABLE)
    rows = con.execute("SELECT body FROM agentic ORDER BY run_id, recipe, workload, tier")
    return [AgenticRecord.model_validate_json(body) for (body,) in rows]


def capacity_table(records: Iterable[AgenticRecord]) -> tuple[list[str], list[dict[str, Any]]]:
    """(tier names, one row per configuration): the latest run's passing concurrency per tier,
    with agents per GPU, per kW and per $/hour."""
    tiers: list[str] = []
    rows: dict[tuple[str, ...], dict[str, Any]] = {}
    for r in sorted(records, key=lambda r: r.run_id):
        if r.tier not in tiers:
            tiers.append(r.tier)
        config = (r.recipe, r.hardware, r.engine, r.precision, r.workload)
        row = rows.get(config)
        if row is None or row["run_id"] < r.run_id:
            row = rows[config] = {"recipe": r.recipe, "model": r.model, "hardware": r.hardware,
                                  "engine": r.engine, "precision": r.precision,
                                  "workload": r.workload, "run_id": r.run_id, "gpus": r.gpus,
                                  "tiers": {}}
        row["tiers"][r.tier] = {"agents": r.passing_concurrency, "bounded": r.bounded,
                                "agents_per_gpu": r.agents_per_gpu,
                                "agents_per_kw": r.agents_per_kw,
                                "agents_per_usd_hour": r.agents_per_usd_hour}
    return tiers, [rows[k] for k in sorted(rows)]
