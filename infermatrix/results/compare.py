"""Compare two sets of records configuration by configuration (natural key), as markdown.

Each side is reduced to its latest measurement per configuration. A headline metric's change
is ``(new − base) / |base|``; it is a regression or an improvement only beyond both the levels'
own uncertainty and the configuration's night-to-night spread (results/regression.py), else
"same".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..markup import md_code, md_text
from .failures import JobFailure, latest
from .pareto import latest_per_config
from .records import NaturalKey, Record
from .regression import DEFAULT_NOISE, MIN_NIGHTS, Rule, Verdict, judge

# (metric, higher is better): the dashboard's compare view uses the same list
HEADLINE: tuple[tuple[str, bool], ...] = (
    ("output_tput_per_gpu", True),
    ("interactivity", True),
    ("median_ttft_ms", False),
    ("median_e2el_ms", False),
)
LABELS = {"output_tput_per_gpu": "output tok/s/GPU", "interactivity": "tok/s/user",
          "median_ttft_ms": "median TTFT (ms)", "median_e2el_ms": "median E2E (ms)"}
# the order rows and counts are shown in: what needs attention first
CHANGES = ("now failing", "regression", "improved", "fixed", "new", "gone", "failing", "same")


@dataclass(frozen=True)
class Row:
    key: NaturalKey
    base: Record | None
    new: Record | None
    change: str
    deltas: dict[str, float | None] = field(default_factory=dict)  # metric -> relative change
    failure: JobFailure | None = None  # why a side's job broke (the new side's, else the base's)
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # metric -> the rule's verdict

    def worse_by(self, metric: str, higher: bool) -> float:
        """How much worse ``metric`` got, as a fraction (≤ 0 when it did not get worse)."""
        d = self.deltas.get(metric)
        return 0.0 if d is None else (-d if higher else d)


def delta(base: float | None, new: float | None) -> float | None:
    if base is None or new is None or base == 0:
        return None
    return (new - base) / abs(base)


Side = Record | JobFailure  # a configuration's latest level, or the failure of its job


def _ok(side: Side) -> bool:
    return isinstance(side, Record) and side.ok


def classify(base: Side | None, new: Side | None, noise: float = DEFAULT_NOISE,
             rule: Rule | None = None
             ) -> tuple[str, dict[str, float | None], dict[str, Verdict]]:
    """(change, metric -> relative change, metric -> verdict); ``rule`` (default: the noise
    band alone) says what is beyond the noise."""
    if base is None or new is None:
        return ("new" if base is None else "gone"), {}, {}
    if not (_ok(base) and _ok(new)) or not (isinstance(base, Record) and isinstance(new, Record)):
        return ("failing" if not (_ok(base) or _ok(new))
                else "now failing" if _ok(base) else "fixed"), {}, {}
    rule = rule if rule is not None else Rule(noise=noise)
    deltas = {m: delta(base.metric(m), new.metric(m)) for m, _ in HEADLINE}
    verdicts = {m: v for m, higher in HEADLINE
                if (v := judge(m, higher, base, new, rule)) is not None}
    worse = any(v.significant and v.worse for v in verdicts.values())
    better = any(v.significant and not v.worse for v in verdicts.values())
    return ("regression" if worse else "improved" if better else "same"), deltas, verdicts


def latest_sides(records: Iterable[Record], failures: Iterable[JobFailure] = ()
                 ) -> dict[NaturalKey, Side]:
    """Each configuration's latest state: its latest level, or the failure of a job of a later
    run that was to measure it (run ids sort by time)."""
    out: dict[NaturalKey, Side] = {r.natural_key: r for r in latest_per_config(records)}
    for key, f in latest(list(failures)).items():
        if key not in out or out[key].run_id < f.run_id:
            out[key] = f
    return out


def compare(base: Iterable[Record], new: Iterable[Record], noise: float = DEFAULT_NOISE,
            base_failures: Iterable[JobFailure] = (), new_failures: Iterable[JobFailure] = (),
            rule: Rule | None = None) -> list[Row]:
    """One row per configuration of either side, the most urgent changes first; a job that
    broke (a failure record) counts as failing each level it was to measure. ``rule``: the
    regression rule with the history's night-to-night spreads (default: the noise band)."""
    a, b = latest_sides(base, base_failures), latest_sides(new, new_failures)
    rows = []
    for k in sorted(a.keys() | b.keys()):
        old, now = a.get(k), b.get(k)
        broke = next((s for s in (now, old) if isinstance(s, JobFailure)), None)
        change, deltas, verdicts = classify(old, now, noise, rule)
        rows.append(Row(k, old if isinstance(old, Record) else None,
                        now if isinstance(now, Record) else None, change, deltas,
                        failure=broke, verdicts=verdicts))
    return sorted(rows, key=lambda r: CHANGES.index(r.change))


def failures(rows: Iterable[Row], threshold: float) -> list[Row]:
    """Rows that fail a regression gate: a level that passed now fails, or a regression (beyond
    the noise, see ``classify``) whose metric is worse by more than ``threshold`` (a fraction;
    0: every regression)."""
    return [r for r in rows if r.change == "now failing"
            or (r.change == "regression" and any(
                v.significant and v.worse and abs(v.change) > threshold
                for v in r.verdicts.values()))]


def _fmt(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}"


def _cell(row: Row, metric: str) -> str:
    old = row.base.metric(metric) if row.base is not None else None
    new = row.new.metric(metric) if row.new is not None else None
    if row.failure is not None:
        return f"{_fmt(old)} → job failed" if row.new is None else f"job failed → {_fmt(new)}"
    if row.base is None or row.new is None:
        return _fmt(new if row.new is not None else old)
    d = row.deltas.get(metric)  # none when a side failed: its numbers are partial
    v = row.verdicts.get(metric)
    mark = "" if v is None or not v.significant else " ▼" if v.worse else " ▲"
    return f"{_fmt(old)} → {_fmt(new)}" + ("" if d is None else f" ({d:+.1%}{mark})")


def _runs(records: Sequence[Record]) -> str:
    runs = sorted({r.run_id for r in records})
    text = ", ".join(md_code(r) for r in runs[:3]) + (" …" if len(runs) > 3 else "")
    return f"{text or 'nothing'} ({len(records)} levels)"


def rule_line(rule: Rule, lookback: int | None) -> str:
    window = f"the last {lookback} runs" if lookback else "the history"
    return (f"A change counts beyond z = {rule.z:g} × both the levels' own bootstrap spread and "
            f"the night-to-night spread over {window} (▼ worse, ▲ better); ±{rule.noise:.0%} "
            f"stands in for the nights of a configuration with under {MIN_NIGHTS} runs.")


def markdown(rows: Sequence[Row], base: Sequence[Record], new: Sequence[Record],
             noise: float = DEFAULT_NOISE, rule: Rule | None = None,
             lookback: int | None = None) -> str:
    """The comparison for a job summary: counts, then one table row per configuration, then
    each change beyond the noise with its size and confidence, then why jobs failed."""
    counts = Counter(r.change for r in rows)
    rule = rule if rule is not None else Rule(noise=noise)
    lines = ["## infermatrix compare", "",
             f"Base: {_runs(base)} · new: {_runs(new)} · noise ±{noise:.0%}", "",
             rule_line(rule, lookback), "",
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
    return "\n".join(lines + significant_changes(rows) + failure_reasons(rows)) + "\n"


def significant_changes(rows: Sequence[Row], most: int = 50) -> list[str]:
    """Markdown lines: every metric change beyond the noise, by how much and how sure."""
    found = [(r, v) for r in rows if r.change in ("regression", "improved")
             for v in r.verdicts.values() if v.significant]
    if not found:
        return []
    lines = ["", "### Changes beyond the noise", ""]
    for r, v in found[:most]:
        recipe, workload, runner, conc = r.key
        lines.append(f"- {'**worse**' if v.worse else 'better'}: {md_code(recipe)} · "
                     f"{md_text(workload)} · {md_text(runner)} · c={conc}: {LABELS[v.metric]} {v.text()}")
    if len(found) > most:
        lines.append(f"- … and {len(found) - most} more")
    return lines


def failure_reasons(rows: Sequence[Row]) -> list[str]:
    """Markdown lines: why each job that now fails (or still fails) broke, once per job."""
    seen: dict[tuple[str, str], tuple[str, JobFailure]] = {}
    for r in rows:
        if r.failure is not None and r.change in ("now failing", "failing"):
            seen.setdefault(r.failure.key, (r.change, r.failure))
    if not seen:
        return []
    lines = ["", "### Jobs that failed", ""]
    for change, f in seen.values():
        recipe, workload, runner, run, stage, reason = (
            " ".join(t.split()).replace("`", "'")  # each a code span: no markup from a record
            for t in (f.recipe, f.workload, f.runner, f.run_id, f.stage, f.reason))
        lines.append(f"- **{change}**: `{recipe}` · `{workload}` · `{runner}` "
                     f"(run `{run}`, {stage}): `{reason}`")
    return lines
