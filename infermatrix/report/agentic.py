"""The agentic capacity page: passing concurrency per SLO tier per configuration, as static HTML.

One self-contained file (style and the theme switch inline, no network; the tables need no
script), written by ``infermatrix capacity --report PAGE.html`` and as ``agentic.html`` by the
report. Per (model, workload) a table of configurations × tiers: the agents that pass, per GPU
(every pool's GPUs), per MW of measured power, per $/hour, the first failing level and whether
the search was bounded; the best value of each column per tier is highlighted. The dashboard's
"Agentic capacity" tab draws the same table from the same rows (``capacity_rows``) in its script.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from ..results.agentic import AgenticRecord, capacity_rows, tier_order
from ..results.export import write_text_atomic
from . import simulated
from .page import page_html

# (cell key, column header, what it means): the per-tier columns, in order
METRICS = (
    ("agents", "agents", "passing concurrency: the most concurrent agents that meet the tier"),
    ("agents_per_gpu", "/GPU", "agents per GPU, every pool's GPUs (prefill + decode)"),
    ("agents_per_mw", "/MW", "agents per MW of measured mean GPU power (the cell's tooltip: the kW)"),
    ("agents_per_usd_hour", "/$·h", "agents per US$ per hour of the deployment's GPUs"),
)
NOTE = (
    "A level passes a tier when the 25th percentile of output speed is at least the tier's and "
    "the 95th percentile of time to first token at most its limit (docs/agentic.md). "
    "“≥ N”: the largest level searched still passed, so the search is not bounded. Per MW "
    "only where GPU power was measured. The best value of each column per tier is highlighted; "
    "the latest search of each configuration is shown."
)


def fmt(v: float | None, digits: int | None = None) -> str:
    """As the dashboard's ``fmt``: thousands separators from 1,000, else 2 decimals below 10 and
    1 above, trailing zeros dropped; "–" for no value."""
    if v is None or not math.isfinite(v):
        return "–"
    if abs(v) >= 1000:
        return f"{math.floor(v + 0.5):,}"  # Math.round
    d = digits if digits is not None else (2 if abs(v) < 10 else 1)
    # toLocaleString rounds the shortest decimal of the double half away from zero (2.675 → 2.68)
    exact = Decimal(repr(abs(float(v)))).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP)
    text = f"{exact:,f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return f"-{text}" if v < 0 and exact else text


def rank_key(row: dict[str, Any], tiers: Sequence[str]) -> tuple[Any, ...]:
    """Default order within a group: agents per GPU, strictest tier first, then the recipe."""
    per_gpu = []
    for name in reversed(tiers):
        cell = row["tiers"].get(name) or {}
        v = cell.get("agents_per_gpu")
        per_gpu.append(-(v if v is not None else cell.get("agents", -1)))
    return (*per_gpu, row["recipe"], row["run_id"])


def groups(
    rows: Iterable[dict[str, Any]], tiers: Sequence[dict[str, Any]]
) -> list[tuple[str, str, list[str], list[dict[str, Any]]]]:
    """(model, workload, tier names present, rows in rank order), by model then workload."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault((row["model"], row["workload"]), []).append(row)
    result = []
    for (model, workload), members in sorted(out.items()):
        names = [t["name"] for t in tiers if any(t["name"] in r["tiers"] for r in members)]
        result.append((model, workload, names, sorted(members, key=lambda r: rank_key(r, names))))
    return result


def best(rows: Sequence[dict[str, Any]], tier: str, metric: str) -> float | None:
    """The best (highest, positive) value of a column when at least two rows have one."""
    values = [c[metric] for r in rows if (c := r["tiers"].get(tier)) and c.get(metric) is not None]
    return max(values) if len(values) > 1 and max(values) > 0 else None


def _tier_head(name: str, rows: Sequence[dict[str, Any]]) -> str:
    cell = next(r["tiers"][name] for r in rows if name in r["tiers"])
    limits = (
        f"P25 ≥ {fmt(cell.get('min_output_speed'))} tok/s · "
        f"P95 TTFT ≤ {fmt(cell.get('max_ttft_s'))} s"
    )
    return (
        f'<th colspan="{len(METRICS) + 1}" class="tier">{html.escape(name)} '
        f'<span class="muted">{html.escape(limits)}</span></th>'
    )


def short_recipe(row: dict[str, Any]) -> str:
    """The recipe id without its model (the group's title names it)."""
    model, recipe = row.get("model") or "", row["recipe"]
    return recipe[len(model) + 1 :] if model and recipe.startswith(model + "/") else recipe


def _config_title(row: dict[str, Any]) -> str:
    return f"{row['recipe']} · run {row['run_id']}" + (
        f" · sessions: {row['source']}" if row.get("source") else ""
    )


def _badges(row: dict[str, Any]) -> str:
    out = []
    if row.get("mode") == "disaggregated":
        out.append("disagg")
    if row.get("simulated"):
        scale = row.get("time_scale") or 1
        out.append("sim" + (f" ×{fmt(scale)}" if scale != 1 else ""))
    return "".join(f' <span class="badge">{html.escape(b)}</span>' for b in out)


def _reason(row: dict[str, Any], tier: str, concurrency: int | None) -> str:
    for lv in row["levels"]:
        if lv["concurrency"] == concurrency:
            return (lv["tiers"].get(tier) or {}).get("reason", "")
    return ""


def _tier_cells(row: dict[str, Any], name: str, bests: dict[str, float | None]) -> str:
    cell = row["tiers"].get(name)
    if cell is None:
        return f'<td class="muted tier-start" colspan="{len(METRICS) + 1}">not searched</td>'
    out = []
    for i, (metric, _, _) in enumerate(METRICS):
        v = cell.get(metric)
        classes = ["num"] + (["tier-start"] if i == 0 else [])
        if v is not None and bests.get(metric) is not None and v == bests[metric]:
            classes.append("best")
        title = ""
        if metric == "agents":
            text = fmt(v) if cell.get("bounded", True) else f"≥ {fmt(v)}"
        elif metric == "agents_per_mw" and v is not None:
            text = fmt(v)
            title = (
                f"{fmt(cell.get('agents_per_kw'))} agents per kW · "
                f"{fmt((cell.get('avg_power_w') or 0) / 1000)} kW measured"
            )
        elif metric == "agents_per_mw":
            text, title = "–", "GPU power not measured"
        else:
            text = fmt(v)
        attrs = f' title="{html.escape(title)}"' if title else ""
        out.append(
            f'<td class="{" ".join(classes)}" data-tier="{html.escape(name)}" '
            f'data-metric="{metric}"{attrs}>{html.escape(text)}</td>'
        )
    first = cell.get("first_failing")
    if not cell.get("bounded", True):
        out.append(
            f'<td class="muted" data-tier="{html.escape(name)}" data-metric="first_failing"'
            f' title="the largest level searched still passed">not bounded</td>'
        )
    else:
        reason = _reason(row, name, first)
        attrs = f' title="{html.escape(reason)}"' if reason else ""
        out.append(
            f'<td class="num" data-tier="{html.escape(name)}" data-metric="first_failing"'
            f"{attrs}>{html.escape(fmt(first))}</td>"
        )
    return "".join(out)


def levels_table(row: dict[str, Any], tiers: Sequence[str]) -> str:
    """The levels measured for a configuration: their figures and each tier's verdict."""
    head = (
        "<tr><th>concurrency</th><th>completed</th><th>errors</th><th>P25 tok/s</th>"
        "<th>P95 TTFT s</th><th>cached</th><th>GPU kW</th>"
        + "".join(f"<th>{html.escape(t)}</th>" for t in tiers)
        + "</tr>"
    )
    body = []
    for lv in row["levels"]:
        ttft = lv.get("p95_ttft_ms")
        cached, power, err = (
            lv.get("cached_token_ratio"),
            lv.get("avg_power_w"),
            lv.get("error_rate"),
        )
        cells = [
            fmt(lv["concurrency"]),
            fmt(lv.get("completed")),
            "–" if err is None else f"{fmt(100 * err, 1)} %",
            fmt(lv.get("p25_output_speed")),
            fmt(None if ttft is None else ttft / 1000),
            "–" if cached is None else f"{fmt(100 * cached, 0)} %",
            fmt(None if power is None else power / 1000),
        ]
        verdicts = []
        for t in tiers:
            v = lv["tiers"].get(t)
            if v is None:
                verdicts.append('<td class="muted">–</td>')
            elif v["passed"]:
                verdicts.append('<td class="good">✓ pass</td>')
            else:
                why = html.escape(v.get("reason") or "fail")
                verdicts.append(f'<td class="bad">✗ {why}</td>')
        body.append(
            "<tr>"
            + "".join(f'<td class="num">{html.escape(c)}</td>' for c in cells)
            + "".join(verdicts)
            + "</tr>"
        )
    return '<table class="data levels">' + head + "".join(body) + "</table>"


def group_table(rows: Sequence[dict[str, Any]], tiers: Sequence[str]) -> str:
    """One (model, workload)'s table: a row per configuration, a column group per tier."""
    bests = {t: {m: best(rows, t, m) for m, _, _ in METRICS} for t in tiers}
    head1 = (
        '<tr><th rowspan="2">configuration</th><th rowspan="2">hardware</th>'
        '<th rowspan="2">engine</th><th rowspan="2">precision</th>'
        '<th rowspan="2" class="num">GPUs</th><th rowspan="2" class="num">$/h</th>'
        + "".join(_tier_head(t, rows) for t in tiers)
        + "</tr>"
    )
    head2 = (
        "<tr>"
        + "".join(
            "".join(
                f'<th class="num{" tier-start" if i == 0 else ""}" title="{html.escape(tip)}">'
                f"{html.escape(label)}</th>"
                for i, (_, label, tip) in enumerate(METRICS)
            )
            + '<th class="num" title="the lowest level that failed the tier">first fail</th>'
            for _ in tiers
        )
        + "</tr>"
    )
    body = []
    for row in rows:
        body.append(
            f'<tr data-recipe="{html.escape(row["recipe"])}" '
            f'data-run="{html.escape(row["run_id"])}">'
            f'<td title="{html.escape(_config_title(row))}">{html.escape(short_recipe(row))}'
            f"{_badges(row)}</td>"
            f"<td>{html.escape(row['hardware'])}</td><td>{html.escape(row['engine'])}</td>"
            f'<td>{html.escape(row["precision"])}</td><td class="num">{fmt(row.get("gpus"))}</td>'
            f'<td class="num">{fmt(row.get("usd_per_hour"))}</td>'
            + "".join(_tier_cells(row, t, bests[t]) for t in tiers)
            + "</tr>"
        )
    return (
        f'<table class="data agentic"><thead>{head1}{head2}</thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _group_title(model: str, workload: str, n: int) -> str:
    return (
        f"{html.escape(model or 'unknown model')} · {html.escape(workload)} "
        f'<span class="muted">({n} configuration{"s" if n != 1 else ""})</span>'
    )


def render_page(
    records: Sequence[AgenticRecord], *, title: str = "infermatrix · agentic capacity",
    nav: Mapping[str, str] | None = None,
) -> str:
    tiers = tier_order(records)
    rows = [r for r in capacity_rows(records) if r["latest"]]
    sections = []
    for model, workload, names, members in groups(rows, tiers):
        levels = "".join(
            f"<details><summary>{html.escape(_config_title(r))}</summary>"
            f"{levels_table(r, names)}</details>"
            for r in members
        )
        sections.append(
            f'<section class="group" data-model="{html.escape(model)}" '
            f'data-workload="{html.escape(workload)}">'
            f"<h2>{_group_title(model, workload, len(members))}</h2>"
            f'<div class="scroll">{group_table(members, names)}</div>'
            f'<h3 class="muted">Levels searched</h3>{levels}</section>'
        )
    if not sections:
        sections.append('<p class="muted">No agentic capacity search to show.</p>')
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    runs = len({r.run_id for r in records})
    meta = (
        f"{len(rows)} configurations · {runs} search run{'s' if runs != 1 else ''} · "
        f"generated {generated}"
    )
    body = f'<p class="muted note">{html.escape(NOTE)}</p>\n{"".join(sections)}'
    return page_html(title=title, meta=meta, body=body, nav=nav, mark=simulated.of(records),
                     noun="capacity result")


def write_agentic_page(
    records: Sequence[AgenticRecord], path: Path, *, title: str = "infermatrix · agentic capacity",
    nav: Mapping[str, str] | None = None,
) -> Path:
    """Write the agents-per-tier page for ``records`` (the latest search per configuration);
    ``nav``: the report's other pages (label → link) for the header."""
    return write_text_atomic(Path(path), render_page(list(records), title=title, nav=nav))
