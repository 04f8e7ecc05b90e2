"""Compare two sets of records configuration by configuration (natural key), as markdown.

Each side is reduced to its latest measurement per configuration. A headline metric's change
is ``(new − base) / |base|``; within ± noise it is "same".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..markup import md_code, md_text
from .pareto import latest_per_config
from .records import NaturalKey, Record

# (metric, higher is better): the dashboard's compare view uses the same list
HEADLINE: tuple[tuple[str, bool], ...] = (
    ("output_tput_per_gpu", True),
    ("interactivity", True),
    ("median_ttft_ms", False),
    ("median_e2el_ms", False),
)
LABELS = {"output_tput_per_gpu": "output tok/s/GPU", "interactivity": "tok/s/user",
          "median_ttft_ms": "median TTFT (ms)", "median_e2el_ms": "median E2E (ms)"}
DEFAULT_NOISE = 0.03
# the order rows and counts are shown in: what needs attention first
CHANGES = ("now failing", "regression", "improved", "fixed", "new", "gone", "failing", "same")


@dataclass(frozen=True)
class Row:
    key: NaturalKey
    base: Record | None
    new: Record | None
    change: str
    deltas: dict[str, float | None] = field(default_factory=dict)  # metric -> relative change

    def worse_by(self, metric: str, higher: bool) -> float:
        """How much worse ``metric`` got, as a fraction (≤ 0 when it did not get worse)."""
        d = self.deltas.get(metric)
        return 0.0 if d is None else (-d if higher else d)


def delta(base: float | None, new: float | None) -> float | None:
    if base is None or new is None or base == 0:
        return None
    return (new - base) / abs(base)


def classify(base: Record | None, new: Record | None, noise: float = DEFAULT_NOISE
             ) -> tuple[str, dict[str, float | None]]:
    if base is None or new is None:
        return ("new" if base is None else "gone"), {}
    if not (base.ok and new.ok):
        return ("failing" if not (base.ok or new.ok) else "now failing" if base.ok else "fixed"), {}
    deltas = {m: delta(base.metric(m), new.metric(m)) for m, _ in HEADLINE}
    worse = better = False
    for m, higher in HEADLINE:
        d = deltas[m]
        if d is None or abs(d) <= noise:
            continue
        if (d > 0) == higher:
            better = True
        else:
            worse = True
    return ("regression" if worse else "improved" if better else "same"), deltas


def compare(base: Iterable[Record], new: Iterable[Record],
            noise: float = DEFAULT_NOISE) -> list[Row]:
    """One row per configuration of either side, the most urgent changes first."""
    a = {r.natural_key: r for r in latest_per_config(base)}
    b = {r.natural_key: r for r in latest_per_config(new)}
    rows = [Row(k, a.get(k), b.get(k), *classify(a.get(k), b.get(k), noise))
            for k in sorted(a.keys() | b.keys())]
    return sorted(rows, key=lambda r: CHANGES.index(r.change))


def failures(rows: Iterable[Row], threshold: float) -> list[Row]:
    """Rows that fail a regression gate: a level that passed now fails, or a headline metric
    worse by more than ``threshold`` (a fraction)."""
    return [r for r in rows if r.change == "now failing"
            or any(r.worse_by(m, higher) > threshold for m, higher in HEADLINE)]


def _fmt(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}"


def _cell(row: Row, metric: str) -> str:
    old = row.base.metric(metric) if row.base is not None else None
    new = row.new.metric(metric) if row.new is not None else None
    if row.base is None or row.new is None:
        return _fmt(new if row.new is not None else old)
    d = row.deltas.get(metric)  # none when a side failed: its numbers are partial
    return f"{_fmt(old)} → {_fmt(new)}" + ("" if d is None else f" ({d:+.1%})")


def _runs(records: Sequence[Record]) -> str:
    runs = sorted({r.run_id for r in records})
    text = ", ".join(md_code(r) for r in runs[:3]) + (" …" if len(runs) > 3 else "")
    return f"{text or 'nothing'} ({len(records)} levels)"


def markdown(rows: Sequence[Row], base: Sequence[Record], new: Sequence[Record],
             noise: float = DEFAULT_NOISE) -> str:
    """The comparison for a job summary: counts, then one table row per configuration."""
    counts = Counter(r.change for r in rows)
    lines = ["## infermatrix compare", "",
             f"Base: {_runs(base)} · new: {_runs(new)} · noise ±{noise:.0%}", "",
             " · ".join(f"**{counts[c]} {c}**" if c in ("now failing", "regression") and counts[c]
                        else f"{counts[c]} {c}" for c in CHANGES), ""]
    if not rows:
        return "\n".join([*lines, "No configuration on either side."]) + "\n"
    header = ["change", "recipe", "workload", "runner", "conc", *(LABELS[m] for m, _ in HEADLINE)]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        recipe, workload, runner, conc = r.key
        change = f"**{r.change}**" if r.change in ("now failing", "regression") else r.change
        cells = [change, *map(md_text, (recipe, workload, runner, conc)),
                 *(_cell(r, m) for m, _ in HEADLINE)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
