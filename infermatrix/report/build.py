"""Build a report directory: records (JSONL, CSV), plots, frontiers, dashboard, job summary."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..results.agentic import AgenticRecord
from ..results.collect import CollectSummary, collect
from ..results.export import write_records_csv, write_records_jsonl, write_text_atomic
from ..results.failures import JobFailure
from ..results.pareto import VIEWS, frontiers, latest_per_config
from ..results.records import Record, run_order
from .agentic import write_agentic_page
from .dashboard import write_dashboard
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

    A source file already inside ``out_dir`` is linked where it is; otherwise the raw bytes (from
    the run directory or the store) are copied to ``raw/<run>/<job>/conc-<N>.json``.
    """
    out = out_dir.resolve()
    links: dict[Key, str] = {}
    for r in records:
        if r.source:
            src = Path(r.source).resolve()
            if src.is_relative_to(out) and src.is_file():
                links[r.key] = src.relative_to(out).as_posix()
                continue
        body = raw.get(r.key)
        if body is None:
            continue
        rel = Path("raw", _safe(r.run_id), _safe(r.job_id), f"conc-{r.concurrency}.json")
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        links[r.key] = rel.as_posix()
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


def build_report(records: Sequence[Record], out_dir: Path, *, raw: Mapping[Key, bytes] | None = None,
                 collect_summary: CollectSummary | None = None, title: str = "infermatrix results",
                 catalog: str = "catalog.html", launch: Mapping[str, list[dict[str, str]]] | None = None,
                 plots: bool = True,
                 agentic: Sequence[AgenticRecord] | None = None,
                 accuracy_md: str = "",
                 failures: Sequence[JobFailure] = ()) -> dict[str, Path]:
    """Write every report artefact for ``records`` into ``out_dir``; returns name → path.

    ``agentic``: capacity-search records; when there are any, the dashboard gets its "Agentic
    capacity" tab and ``agentic.html`` (the same table as a static page) is written.
    ``accuracy_md``: the accuracy gate's section (evals' ``apply_gate``), ending the summary.
    ``failures``: jobs that broke before or during their levels (summary, dashboard list).
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
    page = None
    if agentic:
        outputs["agentic"] = write_agentic_page(agentic, out_dir / "agentic.html",
                                                title=f"{title} · agentic capacity")
        page = "agentic.html"
    outputs["dashboard"] = write_dashboard(records, out_dir / "index.html", links, title=title,
                                           catalog=catalog, launch=launch, agentic=agentic,
                                           agentic_page=page, failures=failures)
    summary = job_summary(records, collect_summary, agentic=agentic or (), failures=failures)
    if accuracy_md:
        summary += "\n" + accuracy_md
    outputs["summary"] = write_text_atomic(out_dir / "summary.md", summary)
    return outputs


def build_run_report(run_dir: Path, *, plots: bool = True, gate: Gate | None = None
                     ) -> dict[str, Path]:
    """Collect one run directory and write its report into it (used by ``infermatrix sweep``);
    capacity documents in it add the agentic tab and ``agentic.html``; ``gate`` (the accuracy
    gate over the run's evals, from the caller, as ``report`` does not import ``evals``) marks
    the records it holds back and adds its section to the summary."""
    run_dir = Path(run_dir)
    result = collect([run_dir])
    records, accuracy_md = gate(result.records) if gate is not None else (result.records, "")
    return build_report(records, run_dir, collect_summary=result.summary,
                        title=f"infermatrix · {run_dir.name}", plots=plots, agentic=result.agentic,
                        accuracy_md=accuracy_md, failures=result.failures)
