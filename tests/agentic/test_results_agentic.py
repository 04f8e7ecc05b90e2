"""Agentic records: capacity document → records → history store → dashboard table."""

from __future__ import annotations

import asyncio
from pathlib import Path

from infermatrix.capacity import CapacitySearch, CapacitySettings, Footprint, Target
from infermatrix.capacity.run import capacity_document
from infermatrix.capacity.tiers import SLO20, SLO60
from infermatrix.client import BenchConfig
from infermatrix.client.session_sources import SyntheticSource, SyntheticSpec
from infermatrix.client.tokenizer import WordTokenizer
from infermatrix.results import agentic
from infermatrix.results.store import Store


def document(recipe: str, limit20: int, limit60: int, power_w: float | None) -> dict:
    async def measure(c: int) -> dict:
        return {
            "completed": 5,
            "error_rate": 0.0,
            "avg_power_w": power_w,
            "p25_output_speed": 80.0 if c <= limit60 else 30.0 if c <= limit20 else 1.0,
            "p95_ttft_ms": 500.0,
            "cached_token_ratio": 0.9,
        }

    result = asyncio.run(CapacitySearch(measure, [SLO20, SLO60]).run())
    meta = {
        "infermatrix": {"run_id": "r1", "recipe": recipe, "hardware": "H100", "simulated": True}
    }
    return capacity_document(
        result,
        Footprint(gpus=8, usd_per_gpu_hour=2.5),
        CapacitySettings(),
        Target(BenchConfig(base_url="http://127.0.0.1:1")),
        SyntheticSource(SyntheticSpec(), WordTokenizer()),
        "m",
        meta,
    )


def test_records_store_and_table(tmp_path: Path) -> None:
    a = agentic.records_from_document(document("a/x", 40, 10, power_w=5600.0))
    b = agentic.records_from_document(document("b/y", 16, 3, power_w=None))
    assert [(r.tier, r.passing_concurrency) for r in a] == [("SLO20", 40), ("SLO60", 10)]
    assert a[0].agents_per_gpu == 5.0 and a[0].agents_per_kw == 40 / 5.6
    assert a[0].agents_per_usd_hour == 40 / 20.0 and b[0].agents_per_kw is None
    assert [lv.passed for lv in a[1].levels if lv.concurrency in (8, 16)] == [True, False]
    with Store(tmp_path / "h.sqlite") as store:
        assert agentic.save(store, a + b) == 4
        agentic.save(store, a)  # idempotent
        loaded = agentic.load(store)
    assert len(loaded) == 4 and loaded[0] == a[0]
    tiers, rows = agentic.capacity_table(loaded)
    assert tiers == ["SLO20", "SLO60"]
    assert [
        (r["recipe"], r["tiers"]["SLO20"]["agents"], r["tiers"]["SLO60"]["agents"]) for r in rows
    ] == [("a/x", 40, 10), ("b/y", 16, 3)]


def test_load_documents_skips_other_files(tmp_path: Path) -> None:
    import json

    (tmp_path / "cap.json").write_text(json.dumps(document("a/x", 4, 2, None)))
    (tmp_path / "other.json").write_text('{"schema_version": 1}')
    (tmp_path / "broken.json").write_text("{")
    assert len(agentic.load_documents([tmp_path])) == 2
