"""Workload kinds: fixed workloads dump exactly as before agentic ones existed (job fingerprints
hash the dump), agentic workloads carry sessions and SLO tiers, and a field of the wrong kind,
a sweep naming an agentic workload or `infermatrix run` on one is a one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from infermatrix.capacity.tiers import SloTier
from infermatrix.catalog.loader import load_catalog
from infermatrix.catalog.schema import Workload
from infermatrix.cli import main
from infermatrix.plan.jobs import plan_sweep

# Every key a fixed workload dumped before `kind: agentic` existed, in order.
FIXED_KEYS = [
    "kind", "description", "isl", "osl", "range_ratio", "prompts_per_concurrency", "min_prompts",
    "warmups_per_concurrency", "ignore_eos", "endpoint", "flush_cache_between_levels",
    "max_error_rate",
]


def validate(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, list[str]]:
    code = main(["validate", "--root", str(root)])
    return code, capsys.readouterr().err.strip().splitlines()


def add_workload(root: Path, text: str) -> tuple[Path, list[str]]:
    path = root / "matrix" / "workloads.yaml"
    before = path.read_text()
    path.write_text(before + "\n" + text)
    return path, (before + "\n" + text).splitlines()


def line_of(lines: list[str], needle: str) -> int:
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_fixed_workloads_dump_as_before(repo_root: Path) -> None:
    cat = load_catalog(repo_root)
    fixed = [w for w in cat.workloads.values() if w.kind == "fixed"]
    assert fixed
    for wl in fixed:
        assert list(wl.model_dump()) == FIXED_KEYS
        assert list(wl.model_dump(mode="json")) == FIXED_KEYS


def test_repository_agentic_workload(repo_root: Path) -> None:
    wl = load_catalog(repo_root).workloads["agentic-coding"]
    assert wl.kind == "agentic" and wl.endpoint == "chat"
    tiers = [SloTier.model_validate(t.model_dump()) for t in wl.slo_tiers]
    assert tiers == [
        SloTier(name="SLO20", min_output_speed=20, max_ttft_s=10),
        SloTier(name="SLO60", min_output_speed=60, max_ttft_s=5),
    ]
    assert wl.sessions is not None and wl.sessions.source == "synthetic"
    assert wl.sessions.distributions["output_tokens"]["median"] == 150
    assert wl.model_dump()["slo_tiers"][0] == {
        "name": "SLO20", "min_output_speed": 20.0, "max_ttft_s": 10.0,
    }


def test_agentic_defaults_to_chat_and_needs_no_lengths() -> None:
    wl = Workload.model_validate({"kind": "agentic"})
    assert wl.endpoint == "chat" and wl.isl is None and wl.sessions is None


def test_fields_of_the_wrong_kind(capsys: pytest.CaptureFixture[str], catalog_copy: Path) -> None:
    path, lines = add_workload(catalog_copy, """\
fixed-with-sessions:
  isl: 10
  osl: 5
  sessions: {distributions: {turns: 3}}
  slo_tiers: [{name: A, min_output_speed: 1, max_ttft_s: 1}]
fixed-without-osl:
  isl: 10
agentic-with-lengths-policy:
  kind: agentic
  range_ratio: 0.5
  prompts_per_concurrency: 3
""")
    code, err = validate(capsys, catalog_copy)
    f = "matrix/workloads.yaml"
    assert code == 2
    assert err == [
        f"{f}:{line_of(lines, '  sessions: {distrib')}: fixed-with-sessions.sessions: "
        "only for kind: agentic",
        f"{f}:{line_of(lines, '  slo_tiers: [{name: A')}: fixed-with-sessions.slo_tiers: "
        "only for kind: agentic",
        f"{f}:{line_of(lines, 'fixed-without-osl:')}: fixed-without-osl.osl: "
        "field required (a fixed workload needs isl and osl)",
        f"{f}:{line_of(lines, '  range_ratio: 0.5')}: agentic-with-lengths-policy.range_ratio: "
        "only for kind: fixed (agentic sessions set their own lengths, count and exact output)",
        f"{f}:{line_of(lines, '  prompts_per_concurrency: 3')}: "
        "agentic-with-lengths-policy.prompts_per_concurrency: only for kind: fixed (agentic "
        "sessions set their own lengths, count and exact output)",
    ]


def test_bad_sessions_and_tiers(capsys: pytest.CaptureFixture[str], catalog_copy: Path) -> None:
    path, lines = add_workload(catalog_copy, """\
bad-dists:
  kind: agentic
  sessions:
    distributions:
      turns: zipf:a=2
      colour: 3
      user_tokens: "lognormal:median=x"
  slo_tiers:
    - {name: A, min_output_speed: 0, max_ttft_s: 1}
bad-source:
  kind: agentic
  sessions: {source: trace, path: nowhere/manifest.json}
  slo_tiers:
    - {name: A, min_output_speed: 1, max_ttft_s: 1}
    - {name: A, min_output_speed: 2, max_ttft_s: 1}
""")
    code, err = validate(capsys, catalog_copy)
    f = "matrix/workloads.yaml"
    assert code == 2
    assert err == [
        f"{f}:{line_of(lines, 'turns: zipf:a=2')}: bad-dists.sessions.distributions.turns: "
        "a zipf distribution needs high",
        f"{f}:{line_of(lines, 'colour: 3')}: bad-dists.sessions.distributions.colour: Input "
        "should be 'sessions', 'turns', 'system_prompt_tokens', 'user_tokens', 'output_tokens' "
        "or 'tool_delay_s'",
        f"{f}:{line_of(lines, 'median=x')}: bad-dists.sessions.distributions.user_tokens: "
        "not a distribution: could not convert string to float: 'x'",
        f"{f}:{line_of(lines, 'min_output_speed: 0')}: "
        "bad-dists.slo_tiers[0].min_output_speed: Input should be greater than 0",
        f"{f}:{line_of(lines, 'bad-source:') + 3}: bad-source.slo_tiers: tier names must be "
        "unique, got ['A', 'A']",
    ]
    # fixed the tiers: the missing trace file is reported by the cross-file checks
    path.write_text(path.read_text()
                    .replace("- {name: A, min_output_speed: 2", "- {name: B, min_output_speed: 2")
                    .replace("min_output_speed: 0", "min_output_speed: 1")
                    .replace("      colour: 3\n", "").replace("turns: zipf:a=2", "turns: 4")
                    .replace('"lognormal:median=x"', "lognormal:median=50"))
    code, err = validate(capsys, catalog_copy)
    line = next(i for i, s in enumerate(path.read_text().splitlines(), 1) if "nowhere/" in s)
    assert (code, err) == (2, [f"{f}:{line}: bad-source.sessions.path: no such file: "
                               "nowhere/manifest.json (relative to the catalog root)"])


def test_sweep_naming_an_agentic_workload(
    capsys: pytest.CaptureFixture[str], catalog_copy: Path
) -> None:
    """An agentic workload in a sweep entry is planned as a capacity job; the entry's levels
    are for its fixed workloads, which cannot do without them."""
    sweep = catalog_copy / "matrix" / "sweeps" / "agents.yaml"
    sweep.write_text("entries:\n  - recipes: [llama-3.1-70b-instruct/mi300x-vllm-fp8]\n"
                     "    workloads: [smoke-1k-128, agentic-coding]\n    concurrency: [1]\n")
    code, err = validate(capsys, catalog_copy)
    assert (code, err) == (0, [])
    jobs = plan_sweep(load_catalog(catalog_copy), "agents")
    assert [(j.workload, j.measurement.kind, j.concurrency) for j in jobs] == [
        ("smoke-1k-128", "levels", [1]), ("agentic-coding", "capacity", [])]
    assert [t.name for t in jobs[1].capacity.tiers] == ["SLO20", "SLO60"]
    sweep.write_text("entries:\n  - recipes: [llama-3.1-70b-instruct/mi300x-vllm-fp8]\n"
                     "    workloads: [smoke-1k-128, agentic-coding]\n")
    code, err = validate(capsys, catalog_copy)
    assert (code, err) == (2, ["matrix/sweeps/agents.yaml:2: entries[0].concurrency: workload "
                               "'smoke-1k-128' is fixed: the entry needs its concurrency levels"])


def test_run_names_an_agentic_workload_without_levels(
    capsys: pytest.CaptureFixture[str], repo_root: Path, tmp_path: Path
) -> None:
    code = main(["run", "--root", str(repo_root), "--engine", "sim", "--output-dir", str(tmp_path),
                 "--recipe", "llama-3.1-70b-instruct/h200-vllm-fp8", "--workload",
                 "agentic-coding", "--runner-label", "h200-dgx", "--concurrency", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == ["infermatrix: workload 'agentic-coding' is agentic: its capacity search picks "
                   "the levels (drop --concurrency; bounds come from the sweep entry)"]
    assert not list(tmp_path.iterdir())


def test_capacity_resolution_pct_is_planned_and_bounded(
    capsys: pytest.CaptureFixture[str], catalog_copy: Path
) -> None:
    sweep = catalog_copy / "matrix" / "sweeps" / "agents.yaml"
    entry = ("entries:\n  - recipes: [llama-3.1-70b-instruct/mi300x-vllm-fp8]\n"
             "    workloads: [agentic-coding]\n    capacity: {resolution: 8%s}\n")
    sweep.write_text(entry % "")
    (plain,) = plan_sweep(load_catalog(catalog_copy), "agents")
    assert "resolution_pct" not in plain.model_dump_json()  # unset: job files as before
    sweep.write_text(entry % ", resolution_pct: 5")
    (rel,) = plan_sweep(load_catalog(catalog_copy), "agents")
    assert rel.capacity.resolution_pct == 5 and rel.fingerprint != plain.fingerprint
    sweep.write_text(entry % ", resolution_pct: 80")
    code, err = validate(capsys, catalog_copy)
    assert code == 2 and len(err) == 1
    assert err[0].startswith("matrix/sweeps/agents.yaml:4: entries[0].capacity.resolution_pct")
