"""Static plots (matplotlib, Agg): one figure per view, one panel per (model, workload).

Colour = hardware, marker = engine; a thin line is each hardware × engine frontier, the thick
line the frontier over all. Every figure is written as PNG and SVG in a light and a dark theme.
A figure with simulated points says so where nobody can miss it: a "SIMULATED" stamp in the
corner, a watermark across every panel holding them, and the same words in the title and in
the file's metadata.
"""

from __future__ import annotations

import math
import multiprocessing
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
# Labels come from result files (model, hardware, workload names): text, never math text
# ("$x$" would be parsed, and a malformed one breaks the whole report).
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from ..cpus import usable_cpus  # noqa: E402
from ..results.pareto import AXES, VIEWS, frontier, group_by, usable  # noqa: E402
from ..results.records import Record  # noqa: E402
from ..workers import fork_pool  # noqa: E402
from . import simulated  # noqa: E402
from .style import (  # noqa: E402
    DASHES,
    DECADE,
    LOG_METRICS,
    PER_GPU,
    THEMES,
    Theme,
    colours,
    dashes,
    markers,
)

SIMULATED_COLOUR = "#d1242f"
STAMP_IN = 0.3  # inches added above the panels for the simulated stamp
SERIES = ("hardware", "engine", "recipe", "topology")  # one configuration: colour, marker, dashes
MAX_SERIES_LABELS = 8  # a panel with more configurations names them only in the dashboard
RASTERIZE_ABOVE = 2000  # points per panel: above it the SVG embeds the scatter as an image
MAX_COLUMNS = 3
DPI = 110


def _values(recs: Sequence[Record], metric: str) -> list[float]:
    scale = AXES[metric].scale
    return [r.metric(metric) * scale for r in recs]  # type: ignore[operator]


def spans_decades(values: Sequence[float]) -> bool:
    """Whether positive ``values`` span more than a decade: then a log axis shows them all."""
    pos = [v for v in values if v > 0]
    return len(pos) == len(values) > 1 and max(pos) / min(pos) > DECADE


def _dash(index: int) -> tuple[float, ...]:
    return tuple(DASHES[index]) or (1, 0)  # (1, 0): solid


def _series_label(r: Record) -> str:
    """A configuration as the legend names it: the recipe (without its model) and parallelism."""
    recipe = r.recipe.removeprefix(r.model + "/")
    return f"{recipe} · {r.topology}" if r.topology else recipe


def per_gpu_note(records: Sequence[Record], metric: str) -> str:
    """How a per-GPU figure counts GPUs when disaggregated configurations are shown
    (``results.records.derive``): '' when none is or the metric is not per GPU."""
    if metric not in PER_GPU or not any(r.mode == "disaggregated" for r in records):
        return ""
    return f"Disaggregated (hollow markers): {PER_GPU[metric]}; aggregated: per GPU of the deployment."


def _style_axes(ax: plt.Axes, theme: Theme) -> None:
    ax.set_facecolor(theme.background)
    ax.grid(True, color=theme.grid, linewidth=0.6)
    ax.tick_params(colors=theme.foreground, labelsize=8)
    for spine in ax.spines.values():
        spine.set_color(theme.grid)


def simulated_mark(records: Sequence[Record]) -> str | None:
    """The words that mark a figure of ``records`` as simulated, or None (all measured): the
    pages' badge (``simulated.SimMark``), so a PNG says what the page says."""
    mark = simulated.of(records)
    return None if mark is None else mark.stamp


def _stamp(fig: Figure, mark: str) -> None:
    """The mark under the figure's title, in the band ``STAMP_IN`` adds to the top margin."""
    fig.text(0.5, 1 - 0.52 / fig.get_size_inches()[1], mark, ha="center", va="center",
             fontsize=10, fontweight="bold", color="white", gid="simulated-mark",
             bbox={"boxstyle": "round,pad=0.3", "facecolor": SIMULATED_COLOUR, "edgecolor": "none"})


def _watermark(ax: plt.Axes) -> None:
    ax.text(0.5, 0.5, "SIMULATED", transform=ax.transAxes, ha="center", va="center", rotation=25,
            fontsize=30, fontweight="bold", color=SIMULATED_COLOUR, alpha=0.13, zorder=0)


def view_figure(records: Sequence[Record], view: str, theme: Theme) -> Figure | None:
    """The figure for one view, or None when no record has both of its metrics."""
    y, x = VIEWS[view]
    recs = usable(records, x, y)
    if not recs:
        return None
    panels = group_by(recs, ("model", "workload"))
    hw_colour = colours(r.hardware for r in recs)
    eng_marker = markers(r.engine for r in recs)
    dash = dashes((r.hardware, r.engine, f"{r.recipe} {r.topology}") for r in recs)
    cols = min(MAX_COLUMNS, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.8 * cols, 3.6 * rows + 1.2), squeeze=False)
    fig.patch.set_facecolor(theme.background)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, ((model, workload), precs) in zip(axes.flat, panels.items(), strict=False):
        _style_axes(ax, theme)
        many = len(precs) > RASTERIZE_ABOVE
        for (hw, eng, recipe, topo), srecs in group_by(precs, SERIES).items():
            c, m, hollow = hw_colour[hw], eng_marker[eng], srecs[0].mode == "disaggregated"
            ax.scatter(_values(srecs, x), _values(srecs, y), s=10 if many else 22, alpha=0.35,
                       marker=m, rasterized=many, facecolors="none" if hollow else c,
                       edgecolors=c, linewidths=1.0 if hollow else 0)
            line = frontier(srecs, y, x)
            ax.plot(_values(line, x), _values(line, y), color=c, linewidth=1.0, alpha=0.9,
                    marker=m, markersize=4, dashes=_dash(dash[(hw, eng, f"{recipe} {topo}")]),
                    markerfacecolor="none" if hollow else c, label=_series_label(srecs[0]))
        best = frontier(precs, y, x)  # the frontier over all: a wide band under the series
        bx, by = _values(best, x), _values(best, y)
        ax.plot(bx, by, color=theme.foreground, linewidth=8, alpha=0.2, zorder=1,
                solid_capstyle="round", solid_joinstyle="round")
        ax.plot(bx, by, color=theme.foreground, linewidth=1.1, linestyle="--", alpha=0.9, zorder=5)
        # y given: matplotlib otherwise re-places every title at each draw (nothing sits on
        # top of a panel, so 1.0 is where it would put it)
        ax.set_title(f"{model} · {workload}", color=theme.foreground, fontsize=10, y=1.0)
        if any(r.simulated for r in precs):
            _watermark(ax)
        if len(group_by(precs, SERIES)) <= MAX_SERIES_LABELS:
            ax.legend(fontsize=6, frameon=False, labelcolor=theme.foreground, loc="best")
        log = spans_decades(_values(precs, y)) and y in LOG_METRICS
        if log:
            ax.set_yscale("log")
        ax.set_xlabel(AXES[x].label, color=theme.foreground, fontsize=8)
        ax.set_ylabel(AXES[y].label + (" (log)" if log else ""), color=theme.foreground, fontsize=8)
    handles = [Line2D([], [], color=c, marker="o", linestyle="", label=hw) for hw, c in hw_colour.items()]
    handles += [Line2D([], [], color=theme.muted, marker=m, linestyle="", label=e) for e, m in eng_marker.items()]
    handles.append(Line2D([], [], color=theme.foreground, linewidth=6, alpha=0.3, label="frontier (all)"))
    if any(r.mode == "disaggregated" for r in recs):
        handles.append(Line2D([], [], color=theme.muted, marker="o", markerfacecolor="none",
                              linestyle="", label="disaggregated"))
    legend = fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 8), frameon=False,
                        fontsize=8)
    for text in legend.get_texts():
        text.set_color(theme.foreground)
    height_in = fig.get_size_inches()[1]
    mark = simulated_mark(recs)
    fig.suptitle(f"{AXES[y].label} vs {AXES[x].label}" + (" (simulated)" if mark else ""),
                 color=theme.foreground, fontsize=12, y=1 - 0.12 / height_in, va="top")
    if mark:
        _stamp(fig, mark)
    note = per_gpu_note(recs, y)
    if note:
        fig.text(0.5, 0.12 / height_in, note, ha="center", va="bottom", fontsize=7,
                 color=theme.muted, gid="per-gpu-note")
    # Fixed margins in inches: tight_layout costs a full extra draw per figure.
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.2 / width,
                        bottom=1.0 / height, top=1 - (0.75 + (STAMP_IN if mark else 0)) / height,
                        wspace=0.32, hspace=0.55)
    return fig


def write_plots(records: Sequence[Record], out_dir: Path, themes: Sequence[str] = ("light", "dark"),
                formats: Sequence[str] = ("png", "svg"), workers: int | None = None
                ) -> dict[str, Path]:
    """Every view × theme × format under ``out_dir``; returns {"<view>.<theme>.<fmt>": path}.
    The figures are drawn in ``workers`` processes (default: the usable CPUs), forked so they
    share ``records``; drawing is the slow part of a report."""
    global _shared_records
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = [(view, name, out_dir, tuple(formats)) for view in VIEWS for name in themes]
    workers = min(usable_cpus() if workers is None else workers, len(tasks))
    if workers < 2 or multiprocessing.current_process().daemon:  # a pool's worker has no children
        parts = [_write_view(records, *task) for task in tasks]
    else:
        _shared_records = records
        try:
            with fork_pool(workers) as pool:
                parts = pool.starmap(_write_shared_view, tasks, chunksize=1)
                # every figure is drawn: the workers end of themselves (the with's terminate()
                # is then for errors only, so a normal report sends no signal)
                pool.close()
                pool.join()
        finally:
            _shared_records = ()
    written: dict[str, Path] = {}
    for part in parts:  # in task order, as drawing them in turn gives
        written.update(part)
    return written


_shared_records: Sequence[Record] = ()  # write_plots' records, inherited by its forked workers


def _write_shared_view(view: str, theme: str, out_dir: Path, formats: tuple[str, ...]
                       ) -> dict[str, Path]:
    return _write_view(_shared_records, view, theme, out_dir, formats)


def _write_view(records: Sequence[Record], view: str, theme: str, out_dir: Path,
                formats: tuple[str, ...]) -> dict[str, Path]:
    """One view in one theme, in every format (nothing when no record has its metrics)."""
    fig = view_figure(records, view, THEMES[theme])
    if fig is None:
        return {}
    mark = simulated_mark(usable(records, *VIEWS[view]))
    written: dict[str, Path] = {}
    for fmt in formats:
        path = out_dir / f"{view}.{theme}.{fmt}"
        fig.savefig(path, dpi=DPI, facecolor=fig.get_facecolor(), metadata=_metadata(fmt, mark))
        written[path.name] = path
    plt.close(fig)
    return written


def _metadata(fmt: str, mark: str | None) -> dict[str, str]:
    """File metadata naming the figure's provenance (PNG text chunk, SVG description)."""
    if mark is None:
        return {}
    return {"png": {"Description": mark}, "svg": {"Description": mark}}.get(fmt, {})
