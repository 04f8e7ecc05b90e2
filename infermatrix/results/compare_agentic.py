"""Agentic capacity beside throughput in ``compare``: per configuration and SLO tier, the
concurrent agents then and now (each side's latest search of the configuration).

The passing concurrency is what a search measures; agents per GPU, per MW and per $·h follow
from it (and the measured power), so the change is judged on the agents alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..markup import md_text
from .agentic import CONFIG, AgenticRecord, capacity_rows
from .compare import DEFAULT_NOISE, delta

CHANGES = ("fewer", "new", "gone", "more", "same")  # what needs attention first
FIGURES = (("agents", "agents"), ("agents_per_gpu", "/GPU"), ("agents_per_mw", "/MW"),
           ("agents_per_usd_hour", "/$·h"))


@dataclass(frozen=True)
class AgenticRow:
    config: tuple[str, ...]  # agentic.CONFIG: recipe, hardware, engine, precision, workload, runner
    tier: str
    base: dict[str, Any] | None  # the tier's cell of capacity_rows
    new: dict[str, Any] | None
    change: str
    delta: float | None  # relative change of the agents


def _latest(records: Iterable[AgenticRecord]) -> dict[tuple[tuple[str, ...], str], dict[str, Any]]:
    return {(tuple(row[k] for k in CONFIG), tier): cell
            for row in capacity_rows(records) if row["latest"]
            for tier, cell in row["tiers"].items()}


def compare_agentic(base: Iterable[AgenticRecord], new: Iterable[AgenticRecord],
                    noise: float = DEFAULT_NOISE) -> list[AgenticRow]:
    a, b = _latest(base), _latest(new)
    rows = []
    for key in sorted(a.keys() | b.keys()):
        ca, cb = a.get(key), b.get(key)
        d = delta(ca["agents"], cb["agents"]) if ca and cb else None
        if ca is None or cb is None:
            change = "new" if ca is None else "gone"
        elif ca["agents"] == cb["agents"] or (d is not None and abs(d) <= noise):
            change = "same"
        else:
            change = "more" if cb["agents"] > ca["agents"] else "fewer"
        rows.append(AgenticRow(key[0], key[1], ca, cb, change, d))
    return sorted(rows, key=lambda r: CHANGES.index(r.change))


def agentic_regressions(rows: Iterable[AgenticRow], threshold: float) -> list[AgenticRow]:
    """Rows that fail a regression gate: fewer agents by more than ``threshold`` (a fraction)."""
    return [r for r in rows if r.change == "fewer" and r.delta is not None and -r.delta > threshold]


def _fmt(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,}" if isinstance(v, int) else f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def _cell(row: AgenticRow, figure: str) -> str:
    old = row.base.get(figure) if row.base else None
    new = row.new.get(figure) if row.new else None
    if row.base is None or row.new is None:
        return _fmt(new if row.new is not None else old)
    d = delta(old, new)
    return f"{_fmt(old)} → {_fmt(new)}" + ("" if d is None else f" ({d:+.1%})")


def agentic_markdown(rows: Sequence[AgenticRow]) -> str:
    """The compare report's agentic section (empty when neither side has capacity results)."""
    if not rows:
        return ""
    counts = Counter(r.change for r in rows)
    lines = ["", "### Agentic capacity (concurrent agents per SLO tier)", "",
             " · ".join(f"**{counts[c]} {c}**" if c == "fewer" and counts[c] else f"{counts[c]} {c}"
                        for c in CHANGES), "",
             "| change | recipe | workload | tier | " + " | ".join(f[1] for f in FIGURES) + " |",
             "|" + "---|" * (4 + len(FIGURES))]
    for r in rows:
        change = f"**{r.change}**" if r.change == "fewer" else r.change
        cells = [change, *map(md_text, (r.config[0], r.config[CONFIG.index("workload")], r.tier)),
                 *(_cell(r, f) for f, _ in FIGURES)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
