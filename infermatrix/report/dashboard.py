"""The static dashboard: one self-contained index.html (data, script and style inline).

No server, no network: it works from file:// and from GitHub Pages. The records are embedded
column by column (strings dictionary-encoded, floats rounded to 5 significant digits, the
compare view's headline metrics to 7), so 20,000 points stay a few MB.
"""

from __future__ import annotations

import html
import json
import math
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
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
from ..results.records import Record, order_runs, run_order
from ..results.regression import page_settings
from ..results.uncertainty import relative_sigma
from . import simulated
from .agentic import NOTE
from .dashboard_assets import CSS, JS
from .failures_view import encode_failures, failed_section
from .page import header_html
from .simulated import SimMark
from .style import DASHES, DECADE, KNOWN_ENGINES, LOG_METRICS, PALETTE, PER_GPU, colours, markers
from .trend import config_key, key_text, trends

TEXT_COLUMNS = ("run_id", "job_id", "recipe", "model", "hardware", "engine", "engine_version",
                "precision", "mode", "topology", "workload", "runner", "status", "started_at",
                "launcher")
NUMBER_COLUMNS = ("concurrency", "gpus_total", "gpus_prefill", "gpus_decode", "isl", "osl",
                  "output_tput_per_gpu", "total_tput_per_gpu", "input_tput_per_gpu",
                  "interactivity", "e2e_interactivity", "median_ttft_ms", "p99_ttft_ms",
                  "median_tpot_ms", "median_e2el_ms", "p99_e2el_ms", "output_throughput",
                  "request_throughput", "usd_per_m_output_tokens", "usd_per_m_total_tokens",
                  "j_per_output_token", "error_rate")
INLINE_LIMIT = 20_000  # levels a page holds inline; a longer history is loaded in chunks
DATA_FOLDER = "dashboard-data"  # the chunk files, beside index.html
FILTER_COLUMNS = ("model", "workload", "hardware", "engine", "precision")  # the page's filters
Y_METRICS = ("output_tput_per_gpu", "total_tput_per_gpu", "input_tput_per_gpu",
             "usd_per_m_output_tokens", "usd_per_m_total_tokens", "j_per_output_token")
X_METRICS = ("interactivity", "e2e_interactivity", "median_e2el_ms", "median_ttft_ms")

Key = tuple[str, str, int]


COMPARED = frozenset(m for m, _ in HEADLINE)  # 7 digits: the compare view's changes to 1e-6


def _round(v: float | None, digits: int = 5) -> float | int | None:
    if v is None or not math.isfinite(v):
        return None
    if float(v).is_integer():
        return int(v)
    return float(f"{v:.{digits}g}")


def encode(records: Sequence[Record], raw_links: Mapping[Key, str]) -> dict[str, Any]:
    """Column-wise payload the script decodes (see ``decode`` in assets/dashboard.js)."""
    columns: dict[str, Any] = {}
    for name in TEXT_COLUMNS:
        values = [getattr(r, name) for r in records]
        vocab = sorted({v for v in values if v is not None})
        index = {v: i for i, v in enumerate(vocab)}
        columns[name] = {"dict": vocab, "codes": [-1 if v is None else index[v] for v in values]}
    for name in NUMBER_COLUMNS:
        digits = 7 if name in COMPARED else 5
        columns[name] = {"values": [_round(r.metric(name), digits) for r in records]}
    for name, _ in HEADLINE:  # each level's own noise, which the compare view weighs against
        columns["sigma_" + name] = {"values": [
            _round(relative_sigma(r.metric(name), r.ci95.get(name))) for r in records]}
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


def launch_from_catalog(data: Mapping[str, Any]) -> dict[str, list[dict[str, str]]]:
    """Recipe id → its processes' launch commands, from ``catalog_page.catalog_data``'s data."""
    out: dict[str, list[dict[str, str]]] = {}
    for model in data["models"]:
        for entry in model["configurations"]:
            out[str(entry["id"])] = [{"name": str(p.get("name", "")), "role": str(p.get("role", "")),
                                      "command": str(p["command"])} for p in entry["processes"]]
    return out


def launch_commands(path: Path) -> dict[str, list[dict[str, str]]]:
    """Recipe id → its processes' launch commands, from `infermatrix catalog --json`'s file."""
    return launch_from_catalog(read_catalog_json(path))


def read_catalog_json(path: Path) -> dict[str, Any]:
    """`infermatrix catalog --json`'s file, checked enough to give launch commands."""
    try:
        data = read_json_bounded(path)
        launch_from_catalog(data)
        return data
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
    """The page's data without its levels (``chunks`` adds them): what every view needs first."""
    engines = sorted({r.engine for r in records},
                     key=lambda e: (KNOWN_ENGINES.index(e) if e in KNOWN_ENGINES else 99, e))
    axes = {m: {"label": a.label, "higher": a.higher_is_better, "scale": a.scale} for m, a in AXES.items()}
    recipes = {r.recipe for r in records} | {a.recipe for a in agentic or ()}
    extra: dict[str, Any] = {}
    if agentic:
        extra = {"agentic": encode_agentic(agentic), "agentic_page": agentic_page}
    runs = run_order(records)
    return {
        "schema_version": 2, "title": title,
        "hw_colours": colours(r.hardware for r in records),
        "engine_markers": markers(r.engine for r in records), "dashes": DASHES,
        "per_gpu": PER_GPU, "log_metrics": list(LOG_METRICS), "decade": DECADE,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "catalog": catalog, "runs": runs, "engines": engines, "palette": PALETTE,
        "axes": axes, "y_metrics": list(Y_METRICS), "x_metrics": list(X_METRICS),
        "compare_metrics": [list(m) for m in HEADLINE],
        # the regression rule's defaults and the runs its nights are windowed over, a run whose
        # every job failed too (a store's runs, as `infermatrix compare` windows them)
        "compare_rule": page_settings(order_runs(
            [(r.run_id, r.started_at) for r in records]
            + [(f.run_id, f.failed_at) for f in failures])),
        "launch": {rid: cmds for rid, cmds in (launch or {}).items() if rid in recipes},
        "simulated_runs": simulated_runs(records),
        "simulated_levels": sum(1 for r in records if r.simulated),
        "count": len(records), "vocab": {k: sorted({getattr(r, k) for r in records})
                                         for k in FILTER_COLUMNS},
        "start": start_view(records, runs[-1] if runs else None), **extra,
        "failures": encode_failures(failures),  # the "Failed jobs" section (failures_view.py)
    }


def start_view(records: Sequence[Record], run: str | None) -> dict[str, str | None]:
    """The model and workload the chart opens on: the most measured of the latest run (a
    frontier compares like with like), ties to the first name."""
    latest = [r for r in records if r.run_id == run]

    def most(values: Iterable[str]) -> str | None:
        counts = Counter(values)
        return min(counts, key=lambda v: (-counts[v], v)) if counts else None

    model = most(r.model for r in latest)
    return {"model": model, "workload": most(r.workload for r in latest if r.model == model)}


def chunks(records: Sequence[Record], raw_links: Mapping[Key, str], runs: Sequence[str],
           folder: str, inline_limit: int) -> tuple[dict[str, Any], dict[str, str]]:
    """The levels, one chunk per run, and the trends, one chunk per configuration.

    With at most ``inline_limit`` levels, every chunk is inline (the page is complete on its
    own). Beyond it only the latest run is; the rest are script files under ``folder`` (a
    ``<script>`` loads from file:// too, where a fetch may not), loaded when a view needs them,
    so the page's size and time to interactive do not grow with the history. Returns (the
    data's ``chunks`` entry, relative file name → script text).
    """
    by_run: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_run[r.run_id].append(r)
    small = len(records) <= inline_limit
    files: dict[str, str] = {}
    inline: dict[str, Any] = {"runs": {}, "trends": {}}
    out: dict[str, Any] = {"runs": [], "trends": [], "inline": inline}
    for i, run in enumerate(runs):
        body = encode(by_run[run], raw_links)
        name = f"{folder}/run-{i}.js"
        if small or i == len(runs) - 1:
            inline["runs"][str(i)] = body
            name = ""
        else:
            files[name] = _script("run", i, body)
        out["runs"].append({"count": body["count"], "file": name})
    first = {key_text(config_key(r)): r for r in reversed(records)}  # the filters' attributes
    for i, (key, trend) in enumerate(sorted(trends(records, runs).items())):
        name = "" if small else f"{folder}/trend-{i}.js"
        if small:
            inline["trends"][str(i)] = trend
        else:
            files[name] = _script("trend", i, trend)
        out["trends"].append({"key": key, "file": name,
                              **{k: getattr(first[key], k) for k in FILTER_COLUMNS}})
    return out, files


def _script(kind: str, index: int, body: Any) -> str:
    """A chunk file: it hands its data to the page's ``imx_chunk`` when loaded."""
    return f"imx_chunk({json.dumps(kind)},{index},{_json(body)});\n"


def _json(data: Any) -> str:
    # "<" only occurs inside JSON strings, where \u003c means the same: no "</script>" or "<!--"
    # can end or confuse a script element.
    return json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def simulated_runs(records: Sequence[Record]) -> list[str]:
    """Runs with at least one simulated level (the run selector badges them)."""
    return sorted({r.run_id for r in records if r.simulated})


def _select(name: str, label: str) -> str:
    return f'<label>{label}<select id="{name}"></select></label>'


def render_html(data: dict[str, Any], *, mark: SimMark | None = None,
                nav: Mapping[str, str] | None = None) -> str:
    """``mark``: the simulated results among all the page holds (levels and capacity searches):
    the header's badge and the banner; ``nav``: the report's other pages (label → link)."""
    # the failures travel in their own element, read by their own section (failures_view.py)
    blob = _json({k: v for k, v in data.items() if k != "failures"})
    title = html.escape(data["title"])
    filters = "".join(_select(f"f-{k}", k) for k in ("model", "workload", "hardware", "engine", "precision"))
    agentic = data.get("agentic")
    searches = (f' · {_count(len(agentic["rows"]), "capacity search", "capacity searches")}'
                if agentic else "")
    tab = '<button data-view="agentic">Agentic capacity</button>' if agentic else ""
    view = _agentic_view(data.get("agentic_page")) if agentic else ""
    meta = (f'{_count(data["count"], "level")} · {_count(len(data["runs"]), "run")}{searches}'
            f'{_failed_count(data)} · generated {html.escape(data["generated_at"])}')
    buttons = ('<button data-view="chart">Chart</button><button data-view="table">Table</button>'
               f'<button data-view="compare">Compare runs</button>'
               f'<button data-view="trend">Trend</button>{tab}')
    links = {k: v for k, v in (nav or {}).items() if v != "index.html"}
    z = data["compare_rule"]["z"]  # the CLI's default, which the page starts from
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{CSS}</style>
</head>
<body>
{header_html(title=data["title"], meta=meta, nav=links, mark=mark, buttons=buttons)}
<section id="filters">
  {_select("f-run", "run")}{filters}
  <label class="inline"><span>failed levels</span><input type="checkbox" id="f-failed"></label>
</section>{failed_section(data.get("failures") or [])}
<main>
  <p id="loading" class="muted" hidden></p>
  <section class="view" id="view-chart">
    <div class="controls">
      {_select("c-y", "y axis")}{_select("c-x", "x axis")}
      <label class="inline"><input type="checkbox" id="c-logx"> log x</label>
      <label class="inline"><input type="checkbox" id="c-logy"> log y</label>
      <label class="inline"><input type="checkbox" id="c-series" checked> frontier per configuration</label>
      <span id="count" class="muted"></span>
    </div>
    <p id="sim-note" class="sim-note" hidden></p>
    <p id="pergpu-note" class="muted" hidden></p>
    <div id="chart-wrap"><canvas id="chart" aria-label="throughput per GPU against interactivity"></canvas><div id="tip" hidden></div></div>
    <div id="legend"></div>
    <section id="detail" hidden></section>
    <p class="muted">Hover a point for its configuration; click to pin it and follow its links. The wide band marks the Pareto frontier over everything shown, each thin line the frontier of one configuration: colour = hardware, marker = engine, line style = recipe × parallelism within a hardware × engine, hollow markers = disaggregated.</p>
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
      <label>z (infermatrix compare's default: {z:g})<input id="cmp-z" type="number" value="{z:g}" min="0" step="0.5"></label></div>
    <p id="cmp-info" class="muted"></p>
    <div class="scroll"><table class="data" id="cmp"></table></div>
  </section>
  <section class="view" id="view-trend" hidden>
    <div class="controls">{_select("t-config", "configuration (recipe · workload · runner)")}{_select("t-conc", "concurrency")}</div>
    <p id="trend-info" class="muted"></p>
    <div id="trend-charts"></div>
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
                    agentic_page: str | None = None, nav: Mapping[str, str] | None = None,
                    failures: Sequence[JobFailure] = (), inline_limit: int = INLINE_LIMIT) -> Path:
    """``agentic``: capacity-search records for the "Agentic capacity" tab (none: no tab);
    ``agentic_page``: a link to the static page of the same table, relative to ``path``;
    ``nav``: the report's pages (label → link) for the header; ``inline_limit``: up to this
    many levels the page holds them all, beyond it older runs and the trends are chunk files
    in ``DATA_FOLDER`` beside it (see ``chunks``)."""
    data = payload(records, raw_links or {}, title=title, catalog=catalog, launch=launch,
                   agentic=agentic, agentic_page=agentic_page, failures=failures)
    data["chunks"], files = chunks(records, raw_links or {}, data["runs"], DATA_FOLDER,
                                   inline_limit)
    folder = Path(path).parent / DATA_FOLDER
    if folder.is_dir():  # an earlier report's chunks: none may outlive the page naming them
        shutil.rmtree(folder)
    for name, text in files.items():
        target = Path(path).parent / name
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text)
    mark = simulated.of(records, agentic or ())
    return write_text_atomic(path, render_html(data, mark=mark, nav=nav))


def _failed_count(data: dict[str, Any]) -> str:
    failed = len(data.get("failures") or [])
    return f' · <a class="bad" href="#failed">{_count(failed, "failed job")}</a>' if failed else ""


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
