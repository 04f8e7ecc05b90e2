"""Build a report directory: records (JSONL, CSV), plots, frontiers, dashboard, job summary."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..catalog.loader import Catalog
from ..results.agentic import AgenticRecord
from ..results.collect import CollectSummary, collect
from ..results.export import write_records_csv, write_records_jsonl, write_text_atomic
from ..results.failures import JobFailure
from ..results.pareto import VIEWS, frontiers, latest_per_config
from ..results.records import Record, run_order
from . import catalog_page
from .agentic import write_agentic_page
from .catalog_html import PAGE as CATALOG_PAGE
from .catalog_html import write_catalog_page
from .catalog_page import Benchmarks
from .dashboard import INLINE_LIMIT, launch_from_catalog, write_dashboard
from .summary import job_summary

Key = tuple[str, str, int]
Gate = Callable[[Sequence[Record]], tuple[list[Record], str]]  # records -> (marked, markdown)
HEADLINE_VIEW = "throughput-vs-interactivity"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def _safe(part: str) -> str:
    cleaned = _UNSAFE.sub("_", part).strip(".")
    return cleaned or "_"


def raw_links(records: Sequence[Record], out_dir: Path, raw: Mapping[Key, bytes]) -> dict[Key, str]:
    """A relative link from ``out_dir`` to every record's raw JSON.

    A source file already inside ``out_dir`` is linked where it is. Otherwise the raw bytes
    (from the run directory or the store) of a job's levels are copied together, to
    ``raw/<run>/<job>.json``: an object of each level's raw result by concurrency (``"4":
    {...}``), one file per job rather than per level, as a year of history holds 100,000
    levels and creating that many files is most of a report's time.
    """
    out = out_dir.resolve()
    inside = (str(out) + os.sep, str(out_dir.absolute()) + os.sep)  # as resolved, as given
    links: dict[Key, str] = {}
    bundles: dict[tuple[str, str], list[tuple[int, bytes]]] = defaultdict(list)
    for r in records:
        # a cheap textual test first: resolving 100,000 sources that lie elsewhere costs seconds
        if r.source and os.path.abspath(r.source).startswith(inside):
            src = Path(r.source).resolve()
            if src.is_relative_to(out) and src.is_file():
                links[r.key] = src.relative_to(out).as_posix()
                continue
        body = raw.get(r.key)
        if body is not None:
            bundles[(r.run_id, r.job_id)].append((r.concurrency, body))
    made: set[Path] = set()
    for (run, job), levels in bundles.items():
        rel = Path("raw", _safe(run), f"{_safe(job)}.json")
        target = out / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        # each body is one JSON document (collect parsed it): joined as text, not re-parsed
        target.write_bytes(b"{" + b",".join(b'"%d":' % c + body.strip() for c, body in
                                            sorted(levels, key=lambda lv: lv[0])) + b"}\n")
        for conc, _ in levels:
            links[(run, job, conc)] = rel.as_posix()
    return links


def _frontiers_json(records: Sequence[Record]) -> dict[str, object]:
    out: dict[str, object] = {"schema_version": 1, "kind": "frontiers", "views": {}}
    for view, (y, x) in VIEWS.items():
        panels = []
        for (model, workload), series in frontiers(records, y, x).items():
            panels.append({"model": model, "workload": workload, "frontiers": {
                "/".join(k): [{"run_id": r.run_id, "job_id": r.job_id, "recipe": r.recipe,
                               "concurrency": r.concurrency, "x": r.metric(x), "y": r.metric(y)}
                              for r in recs] for k, recs in series.items()}})
        out["views"][view] = {"y": y, "x": x, "panels": panels}  # type: ignore[index]
    return out


def _placeholder_png(path: Path, text: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(6, 3))
    fig.text(0.5, 0.5, text, ha="center", va="center")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


@lru_cache(maxsize=4)
def _load_catalog(root: Path) -> Catalog:
    from ..catalog.loader import load_catalog

    return load_catalog(root)  # seconds: once per process and root


def default_catalog(root: Path | None = None,
                    benchmarks_of: Callable[[Catalog], Benchmarks] | None = None) -> dict[str, Any]:
    """The catalog page's data (``catalog_page.catalog_data``) of ``root`` or this checkout's
    catalog (``catalog.loader.default_root``); benchmark commands only with ``benchmarks_of``
    (they need the client, which only the commands layer joins in). Empty where no catalog
    loads: then every recipe gets a stub entry."""
    from ..catalog.loader import default_root
    from ..catalog.yamlsrc import CatalogError
    from ..engines.flags import RenderError

    try:
        cat = _load_catalog((root or default_root()).resolve())
        return catalog_page.catalog_data(cat, benchmarks_of(cat) if benchmarks_of else None)
    except (CatalogError, RenderError, OSError):
        return {"count": 0, "models": []}


def _pages(agentic: bool, catalog: str) -> dict[str, str]:
    """The header links every page of a report carries (label → page)."""
    pages = {"dashboard": "index.html"}
    if agentic:
        pages["agentic capacity"] = "agentic.html"
    if catalog == CATALOG_PAGE:
        pages["catalog"] = CATALOG_PAGE
    return pages


def build_report(records: Sequence[Record], out_dir: Path, *, raw: Mapping[Key, bytes] | None = None,
                 collect_summary: CollectSummary | None = None, title: str = "infermatrix results",
                 catalog: str = CATALOG_PAGE, launch: Mapping[str, list[dict[str, str]]] | None = None,
                 catalog_data: Mapping[str, Any] | None = None,
                 plots: bool = True,
                 agentic: Sequence[AgenticRecord] | None = None,
                 accuracy_md: str = "", failures: Sequence[JobFailure] = (),
                 inline_limit: int = INLINE_LIMIT) -> dict[str, Path]:
    """Write every report artefact for ``records`` into ``out_dir``; returns name → path.

    ``catalog``: where recipe links point; the default, ``catalog.html``, is written here from
    ``catalog_data`` (``catalog_page.catalog_data``; default: ``default_catalog()``), with an
    entry for every recipe the results name, and gives the launch commands the dashboard's
    detail panel shows unless ``launch`` is given.
    ``agentic``: capacity-search records; when there are any, the dashboard gets its "Agentic
    capacity" tab and ``agentic.html`` (the same table as a static page) is written.
    ``accuracy_md``: the accuracy gate's section (evals' ``apply_gate``), ending the summary.
    ``failures``: jobs that broke before or during their levels (summary, dashboard list).
    ``inline_limit``: a dashboard of more levels loads older runs and trends lazily, from chunk
    files beside it (``dashboard.chunks``).
    """
    from .plots import write_plots  # matplotlib is slow to import: only when drawing

    out_dir.mkdir(parents=True, exist_ok=True)
    records = sorted(records, key=lambda r: (r.run_id, r.job_id, r.concurrency))
    # Plots and frontiers show the current state: the latest measurement of each configuration.
    current = latest_per_config(records) if len(run_order(records)) > 1 else list(records)
    outputs: dict[str, Path] = {
        "records": write_records_jsonl(records, out_dir / "records.jsonl"),
        "records_csv": write_records_csv(records, out_dir / "records.csv"),
    }
    if plots:
        written = write_plots(current, out_dir / "plots")
        headline = written.get(f"{HEADLINE_VIEW}.light.png")
        pareto = out_dir / "pareto.png"
        if headline is not None:
            shutil.copyfile(headline, pareto)
        else:
            _placeholder_png(pareto, "no successful level to plot")
        outputs["pareto"] = pareto
        outputs["plots"] = out_dir / "plots"
    outputs["frontiers"] = write_text_atomic(out_dir / "frontiers.json",
                                             json.dumps(_frontiers_json(current), indent=1) + "\n")
    links = raw_links(records, out_dir, raw or {})
    nav = _pages(bool(agentic), catalog)
    if catalog == CATALOG_PAGE:
        data = catalog_data if catalog_data is not None else default_catalog()
        named = {r.recipe for r in records} | {a.recipe for a in agentic or ()}
        outputs["catalog"] = write_catalog_page(data, out_dir / CATALOG_PAGE, named,
                                                title=f"{title} · catalog", nav=nav)
        launch = launch if launch is not None else launch_from_catalog(data)
    page = None
    if agentic:
        outputs["agentic"] = write_agentic_page(agentic, out_dir / "agentic.html",
                                                title=f"{title} · agentic capacity", nav=nav)
        page = "agentic.html"
    outputs["dashboard"] = write_dashboard(records, out_dir / "index.html", links, title=title,
                                           catalog=catalog, launch=launch, agentic=agentic,
                                           agentic_page=page, nav=nav, failures=failures,
                                           inline_limit=inline_limit)
    summary = job_summary(records, collect_summary, agentic=agentic or (), failures=failures,
                          current=current)
    if accuracy_md:
        summary += "\n" + accuracy_md
    outputs["summary"] = write_text_atomic(out_dir / "summary.md", summary)
    return outputs


def build_run_report(run_dir: Path, *, plots: bool = True, gate: Gate | None = None,
                     catalog_data: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Collect one run directory and write its report into it (used by ``infermatrix sweep``);
    capacity documents in it add the agentic tab and ``agentic.html``; ``gate`` (the accuracy
    gate over the run's evals, from the caller, as ``report`` does not import ``evals``) marks
    the records it holds back and adds its section to the summary."""
    run_dir = Path(run_dir)
    result = collect([run_dir])
    records, accuracy_md = gate(result.records) if gate is not None else (result.records, "")
    return build_report(records, run_dir, collect_summary=result.summary,
                        title=f"infermatrix · {run_dir.name}", plots=plots, agentic=result.agentic,
                        accuracy_md=accuracy_md, failures=result.failures,
                        catalog_data=catalog_data)
