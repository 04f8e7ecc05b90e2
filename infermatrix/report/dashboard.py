"""The static dashboard: one self-contained index.html (data, script and style inline).

No server, no network: it works from file:// and from GitHub Pages. The records are embedded
column by column (strings dictionary-encoded, floats rounded to 5 significant digits), so
20,000 points stay a few MB.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..jsonio import read_json_bounded
from ..results.agentic import AgenticRecord, capacity_rows, tier_order
from ..results.compare import HEADLINE
from ..results.export import write_text_atomic
from ..results.failures import JobFailure
from ..results.pareto import AXES
from ..results.records import Record, run_order
from .agentic import NOTE
from .dashboard_assets import CSS, JS
from .failures_view import encode_failures, failed_section
from .style import KNOWN_ENGINES, PALETTE

TEXT_COLUMNS = ("run_id", "job_id", "recipe", "model", "hardware", "engine", "engine_version",
                "precision", "mode", "topology", "workload", "runner", "status", "started_at")
NUMBER_COLUMNS = ("concurrency", "gpus_total", "gpus_prefill", "gpus_decode", "isl", "osl",
                  "output_tput_per_gpu", "total_tput_per_gpu", "input_tput_per_gpu",
                  "interactivity", "e2e_interactivity", "median_ttft_ms", "p99_ttft_ms",
                  "median_tpot_ms", "median_e2el_ms", "p99_e2el_ms", "output_throughput",
                  "request_throughput", "usd_per_m_output_tokens", "usd_per_m_total_tokens",
                  "j_per_output_token", "error_rate")
Y_METRICS = ("output_tput_per_gpu", "total_tput_per_gpu", "input_tput_per_gpu",
             "usd_per_m_output_tokens", "usd_per_m_total_tokens", "j_per_output_token")
X_METRICS = ("interactivity", "e2e_interactivity", "median_e2el_ms", "median_ttft_ms")

Key = tuple[str, str, int]


def _round(v: float | None) -> float | int | None:
    if v is None or not math.isfinite(v):
        return None
    if float(v).is_integer():
        return int(v)
    return float(f"{v:.5g}")


def encode(records: Sequence[Record], raw_links: Mapping[Key, str]) -> dict[str, Any]:
    """Column-wise payload the script decodes (see ``DATA.columns`` in dashboard_assets)."""
    columns: dict[str, Any] = {}
    for name in TEXT_COLUMNS:
        values = [getattr(r, name) for r in records]
        vocab = sorted({v for v in values if v is not None})
        index = {v: i for i, v in enumerate(vocab)}
        columns[name] = {"dict": vocab, "codes": [-1 if v is None else index[v] for v in values]}
    for name in NUMBER_COLUMNS:
        columns[name] = {"values": [_round(r.metric(name)) for r in records]}
    columns["raw"] = {"values": [raw_links.get(r.key) for r in records]}
    columns["simulated"] = {"values": [1 if r.simulated else 0 for r in records]}
    return {"count": len(records), "columns": columns}


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return _round(value)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def encode_agentic(records: Sequence[AgenticRecord]) -> dict[str, Any]:
    """The agentic capacity view's data: tiers (loosest first), search runs (oldest first) and a
    row per run × configuration (``results.agentic.capacity_rows``), floats to 5 digits."""
    return {"tiers": _rounded(tier_order(records)),
            "runs": sorted({r.run_id for r in records}),
            "rows": _rounded(capacity_rows(records))}


def launch_commands(path: Path) -> dict[str, list[dict[str, str]]]:
    """Recipe id → its processes' launch commands, from `infermatrix catalog --json`'s file."""
    try:
        data = read_json_bounded(path)
        out: dict[str, list[dict[str, str]]] = {}
        for model in data["models"]:
            for entry in model["configurations"]:
                out[str(entry["id"])] = [{"name": str(p.get("name", "")), "role": str(p.get("role", "")),
                                          "command": str(p["command"])} for p in entry["processes"]]
        return out
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the catalog JSON ({exc.strerror})") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path}: not the JSON of `infermatrix catalog --json` ({exc!r})") from None


def payload(records: Sequence[Record], raw_links: Mapping[Key, str], *, title: str,
            catalog: str = "catalog.html",
            launch: Mapping[str, list[dict[str, str]]] | None = None,
            agentic: Sequence[AgenticRecord] | None = None,
            agentic_page: str | None = None,
            failures: Sequence[JobFailure] = ()) -> dict[str, Any]:
    engines = sorted({r.engine for r in records},
                     key=lambda e: (KNOWN_ENGINES.index(e) if e in KNOWN_ENGINES else 99, e))
    axes = {m: {"label": a.label, "higher": a.higher_is_better, "scale": a.scale} for m, a in AXES.items()}
    recipes = {r.recipe for r in records} | {a.recipe for a in agentic or ()}
    extra: dict[str, Any] = {}
    if agentic:
        extra = {"agentic": encode_agentic(agentic), "agentic_page": agentic_page}
    return {
        "schema_version": 1, "title": title,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "catalog": catalog, "runs": run_order(records), "engines": engines, "palette": PALETTE,
        "axes": axes, "y_metrics": list(Y_METRICS), "x_metrics": list(X_METRICS),
        "compare_metrics": [list(m) for m in HEADLINE],
        "launch": {rid: cmds for rid, cmds in (launch or {}).items() if rid in recipes},
        "simulated_runs": simulated_runs(records),
        "simulated_levels": sum(1 for r in records if r.simulated),
        **encode(records, raw_links), **extra,
        "failures": encode_failures(failures),  # the "Failed jobs" section (failures_view.py)
    }


def simulated_runs(records: Sequence[Record]) -> list[str]:
    """Runs with at least one simulated level (the run selector badges them)."""
    return sorted({r.run_id for r in records if r.simulated})


def _simulated_badge(records: int, simulated: int) -> str:
    """The header's warning that some levels were simulated, not measured."""
    if not simulated:
        return ""
    what = "all levels" if simulated == records else f"{simulated:,} of {records:,} levels"
    return (f' <span class="badge sim" id="sim-badge" title="simulated engine in virtual time: '
            f'no hardware measured these">simulated: {what}</span>')


def _select(name: str, label: str) -> str:
    return f'<label>{label}<select id="{name}"></select></label>'


def render_html(data: dict[str, Any]) -> str:
    # "<" only occurs inside JSON strings, where \u003c means the same: no "</script>" or "<!--"
    # can end or confuse the script element.
    # the failures travel in their own element, read by their own section (failures_view.py)
    blob = json.dumps({k: v for k, v in data.items() if k != "failures"}, separators=(",", ":"),
                      allow_nan=False).replace("<", "\\u003c")
    title = html.escape(data["title"])
    filters = "".join(_select(f"f-{k}", k) for k in ("model", "workload", "hardware", "engine", "precision"))
    agentic = data.get("agentic")
    searches = (f' · {_count(len(agentic["rows"]), "capacity search", "capacity searches")}'
                if agentic else "")
    tab = '<button data-view="agentic">Agentic capacity</button>' if agentic else ""
    view = _agentic_view(data.get("agentic_page")) if agentic else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{CSS}</style>
</head>
<body>
<header>
  <h1>{title}</h1>
  <span class="meta">{_count(data["count"], "level")} · {_count(len(data["runs"]), "run")}{searches}{_failed_count(data)} · generated {html.escape(data["generated_at"])}{_simulated_badge(data["count"], data["simulated_levels"])}</span>
  <nav>
    <button data-view="chart">Chart</button><button data-view="table">Table</button><button data-view="compare">Compare runs</button>{tab}
    <button id="theme" title="switch light / dark">◐ theme</button>
  </nav>
</header>
<section id="filters">
  {_select("f-run", "run")}{filters}
  <label class="inline"><span>failed levels</span><input type="checkbox" id="f-failed"></label>
</section>{failed_section(data.get("failures") or [])}
<main>
  <section class="view" id="view-chart">
    <div class="controls">
      {_select("c-y", "y axis")}{_select("c-x", "x axis")}
      <label class="inline"><input type="checkbox" id="c-logx"> log x</label>
      <label class="inline"><input type="checkbox" id="c-series" checked> frontier per hardware × engine</label>
      <span id="count" class="muted"></span>
    </div>
    <p id="sim-note" class="sim-note" hidden></p>
    <div id="chart-wrap"><canvas id="chart" aria-label="throughput per GPU against interactivity"></canvas><div id="tip" hidden></div></div>
    <div id="legend"></div>
    <section id="detail" hidden></section>
    <p class="muted">Hover a point for its configuration; click to pin it and follow its links. The wide band marks the Pareto frontier over everything shown, each thin coloured line the frontier of one hardware × engine.</p>
    <h2>Best configuration at a given interactivity</h2>
    <div class="controls"><label>tok/s/user thresholds<input id="c-best" value="10,20,50,100"></label></div>
    <div class="scroll"><table class="data" id="best"></table></div>
  </section>
  <section class="view" id="view-table" hidden>
    <div class="pager"><button class="btn" id="prev">◀</button><button class="btn" id="next">▶</button><span id="pager-info"></span></div>
    <div class="scroll"><table class="data" id="table"></table></div>
  </section>
  <section class="view" id="view-compare" hidden>
    <div class="controls">{_select("cmp-base", "base run")}{_select("cmp-new", "new run")}
      <label>noise ± %<input id="cmp-noise" type="number" value="3" min="0" step="0.5"></label></div>
    <p id="cmp-info" class="muted"></p>
    <div class="scroll"><table class="data" id="cmp"></table></div>
  </section>{view}
</main>
<script id="imx-data" type="application/json">{blob}</script>
<script>{JS}</script>
</body>
</html>
"""


def _agentic_view(page: str | None) -> str:
    link = ""
    if page:
        link = f' Printable page: <a href="{html.escape(page)}">{html.escape(page)}</a>.'
    return f"""
  <section class="view" id="view-agentic" hidden>
    <p class="muted note">{html.escape(NOTE)} Click a configuration for the levels searched;
    click a column to sort. The run filter picks one search run.{link}</p>
    <div id="agentic"></div>
    <section id="ag-detail" hidden></section>
  </section>"""


def write_dashboard(records: Sequence[Record], path: Path, raw_links: Mapping[Key, str] | None = None,
                    *, title: str = "infermatrix results", catalog: str = "catalog.html",
                    launch: Mapping[str, list[dict[str, str]]] | None = None,
                    agentic: Sequence[AgenticRecord] | None = None,
                    agentic_page: str | None = None,
                    failures: Sequence[JobFailure] = ()) -> Path:
    """``agentic``: capacity-search records for the "Agentic capacity" tab (none: no tab);
    ``agentic_page``: a link to the static page of the same table, relative to ``path``."""
    data = payload(records, raw_links or {}, title=title, catalog=catalog, launch=launch,
                   agentic=agentic, agentic_page=agentic_page, failures=failures)
    return write_text_atomic(path, render_html(data))


def _failed_count(data: dict[str, Any]) -> str:
    failed = len(data.get("failures") or [])
    return f' · <a class="bad" href="#failed">{_count(failed, "failed job")}</a>' if failed else ""


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
