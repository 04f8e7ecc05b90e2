"""What `infermatrix sim validate` prints and draws: one line per row, the summaries per split,
the out-of-source headline by kind of metric, and the published-vs-simulated plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .published import SPLITS, PublishedRow, out_of_source, source_key
from .validate_score import Outcome, per_kind, per_source_median, summarise


def headline_lines(outcomes: Sequence[Outcome], table: Sequence[PublishedRow]) -> list[str]:
    """The calibrate and report summaries, then the out-of-source headline by kind
    (out of the sources of ``table``'s calibrate rows)."""
    oos_ids = {r.id for r in out_of_source([o.row for o in outcomes], table)}
    lines = []
    for split in SPLITS:
        part = [o for o in outcomes if o.row.split == split]
        if part:
            lines.append(summarise(part).line(split))
    inside = [o for o in outcomes if o.row.split == "report" and o.row.id not in oos_ids]
    if inside:
        lines.append(summarise(inside).line("report rows sharing a source or setup with "
                                            "calibrate rows (not a test of the model)"))
    oos = [o for o in outcomes if o.row.id in oos_ids]
    if oos:
        sources = len({source_key(o.row) for o in oos})
        lines.append(summarise(oos).line(f"OUT-OF-SOURCE ({sources} sources never calibrated on)"))
        lines.append(f"  leave-one-source-out: median of the {sources} sources' median |error|: "
                     f"{per_source_median(oos):.0%}")
        lines += [f"  {s.line(kind)}" for kind, s in per_kind(oos).items()]
    return lines


def format_outcome(o: Outcome) -> str:
    r = o.row
    sim = "—" if o.simulated is None else f"{o.simulated:,.4g}"
    err = o.detail if o.error is None else f"{o.error:+.0%}"
    if r.bound and o.error is not None:
        side = "<=" if r.bound == "at_most" else ">="
        err = f"{'met' if o.error == 0 else err} (bound: {side} {r.value:,.4g})"
    return f"{r.split:9s} {r.id:46s} {r.metric:19s} {r.value:>10,.4g} {sim:>10s}  {err}"


def plot(outcomes: Sequence[Outcome], path: Path) -> None:
    """Published vs simulated, log-log, with the 2× band; marked as simulated."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 6))
    pts = [o for o in outcomes if o.simulated]
    for split, marker in (("calibrate", "o"), ("report", "s")):
        xs = [o.row.value for o in pts if o.row.split == split]
        ys = [o.simulated for o in pts if o.row.split == split]
        ax.scatter(xs, ys, marker=marker, label=f"{split} ({len(xs)})", alpha=0.75)
    if pts:
        lo = min(min(o.row.value, o.simulated or 1) for o in pts) / 2
        hi = max(max(o.row.value, o.simulated or 1) for o in pts) * 2
        ax.plot([lo, hi], [lo, hi], "k-", lw=1)
        ax.plot([lo, hi], [2 * lo, 2 * hi], "k:", lw=0.8)
        ax.plot([lo, hi], [lo / 2, hi / 2], "k:", lw=0.8)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("published")
    ax.set_ylabel("simulated")
    ax.set_title("infermatrix sim validate: published vs SIMULATED (dotted: 2x)")
    ax.text(0.98, 0.02, "SIMULATED", transform=ax.transAxes, ha="right", va="bottom",
            fontsize=18, color="red", alpha=0.35, fontweight="bold")
    ax.legend(loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
