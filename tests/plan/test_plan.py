"""Planner: jobs per (recipe, workload, runner), filters, ids, fingerprints, GitHub shards."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infermatrix.catalog.loader import load_catalog
from infermatrix.cli import main
from infermatrix.plan import github
from infermatrix.plan.github import (
    MATRIX_CAP,
    CapacityError,
    matrix_outputs,
    output_bytes,
    write_github_outputs,
    write_plan,
)
from infermatrix.plan.jobs import Filters, Job, plan_sweep


def read_github_output(path: Path) -> dict[str, str]:
    """Parse the `key<<DELIM ... DELIM` blocks GitHub reads from $GITHUB_OUTPUT."""
    out: dict[str, str] = {}
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"([A-Za-z0-9_]+)<<(\S+)", lines[i])
        assert m, f"unexpected line {lines[i]!r}"
        end = lines.index(m.group(2), i + 1)
        out[m.group(1)] = "\n".join(lines[i + 1:end])
        i = end + 1
    return out


def fake_job(n: int) -> Job:
    return Job(id=f"job-{n}", sweep="s", recipe="m/r", model="m", hardware="H200", engine="vllm",
               precision="fp8", mode="aggregated", workload="w", runner="h200-dgx",
               launcher="docker", concurrency=[1, 2], gpus=8, nodes=1, fingerprint=f"{n:016x}",
               timeout_minutes=60, measurement={"kind": "levels", "concurrency": [1, 2]}, evals=[])


def test_smoke_sweep_jobs(repo_root: Path) -> None:
    cat = load_catalog(repo_root)
    jobs = plan_sweep(cat, "smoke")
    by_recipe = {}
    for job in jobs:
        by_recipe.setdefault(job.recipe, []).append(job)
    # SGLang recipe: one job sweeping every level against one server
    (sglang,) = by_recipe["deepseek-r1-0528/h200-sglang-fp8"]
    assert sglang.concurrency == [1, 4, 16]
    assert sglang.runner == "h200-dgx" and sglang.gpus == 8 and sglang.nodes == 1
    # vLLM recipe has --max-num-seqs ${CONC}: the server changes per level, so one job per level
    vllm = by_recipe["llama-3.1-70b-instruct/h200-vllm-fp8"]
    assert [j.concurrency for j in vllm] == [[1], [4], [16]]
    assert len({j.id for j in jobs}) == len(jobs) == 4


def test_ids_and_fingerprints_are_deterministic_and_sensitive(catalog_copy: Path) -> None:
    first = plan_sweep(load_catalog(catalog_copy), "smoke")
    again = plan_sweep(load_catalog(catalog_copy), "smoke")
    assert [(j.id, j.fingerprint) for j in first] == [(j.id, j.fingerprint) for j in again]
    recipe = catalog_copy / "benchmarks" / "deepseek-r1-0528" / "h200-sglang-fp8.yaml"
    recipe.write_text(recipe.read_text().replace("max-running-requests: 512", "max-running-requests: 256"))
    changed = plan_sweep(load_catalog(catalog_copy), "smoke")
    diff = {a.recipe for a, b in zip(first, changed, strict=True) if a.fingerprint != b.fingerprint}
    assert diff == {"deepseek-r1-0528/h200-sglang-fp8"}
    # ids name the job, not its contents: they stay put when a knob changes
    assert [j.id for j in first] == [j.id for j in changed]
    # notes and tags do not change numbers, so they do not change the fingerprint
    recipe.write_text(recipe.read_text().replace("tags: [inferencemax]", "tags: [other]"))
    assert [j.fingerprint for j in plan_sweep(load_catalog(catalog_copy), "smoke")] == [
        j.fingerprint for j in changed]


def test_filters(repo_root: Path) -> None:
    cat = load_catalog(repo_root)
    assert {j.engine for j in plan_sweep(cat, "nightly", Filters(engine=["sglang"]))} == {"sglang"}
    assert plan_sweep(cat, "nightly", Filters(hardware=["TPU*"])) == []
    jobs = plan_sweep(cat, "nightly", Filters(workload=["fixed-1k-*"], model=["deepseek-r1*"],
                                              hardware=["H200"]))
    assert jobs and {(j.model, j.hardware) for j in jobs} == {("deepseek-r1-0528", "H200")}
    assert {j.workload for j in jobs} == {"fixed-1k-1k", "fixed-1k-8k"}
    everything = plan_sweep(cat, "nightly")
    assert len(jobs) < len(everything)


def test_plan_cli_formats(capsys: pytest.CaptureFixture[str], repo_root: Path, tmp_path: Path) -> None:
    assert main(["plan", "smoke", "--root", str(repo_root), "--format", "json"]) == 0
    jobs = json.loads(capsys.readouterr().out)
    assert len(jobs) == 4 and {"id", "fingerprint", "concurrency", "runner"} <= set(jobs[0])
    out, plan_dir = tmp_path / "gh", tmp_path / "plan"
    assert main(["plan", "matrix/sweeps/smoke.yaml", "--root", str(repo_root), "--format", "github",
                 "--github-output", str(out), "--plan-dir", str(plan_dir)]) == 0
    outputs = read_github_output(out)
    assert outputs == {"jobs_total": "4", "shard_count": "1", "shards": "[0]"}  # no job in them
    assert [c["id"] for c in json.loads((plan_dir / "shard-0.json").read_text())] \
        == [j["id"] for j in jobs]
    # the shard file is a plan file: job.yml's select job reads it back as a matrix
    matrix = tmp_path / "matrix"
    assert main(["plan", "--format", "matrix", "--github-output", str(matrix), "--",
                 str(plan_dir / "shard-0.json")]) == 0
    cells = json.loads(read_github_output(matrix)["jobs"])
    assert [c["job"] for c in cells] == jobs
    assert [c["runs_on"] for c in cells] == [["self-hosted", j["runner"]] for j in jobs]


def test_plan_table_reads_a_plan_file(capsys: pytest.CaptureFixture[str], repo_root: Path,
                                      tmp_path: Path) -> None:
    plan_dir = tmp_path / "plan"
    write_plan(plan_sweep(load_catalog(repo_root), "smoke"), plan_dir)
    capsys.readouterr()
    assert main(["plan", str(plan_dir / "shard-0.json"), "--engine", "sglang"]) == 0
    assert capsys.readouterr().out.strip().endswith("1 jobs, 3 concurrency levels")
    (tmp_path / "bad.json").write_text('[{"id": "x"}]')
    assert main(["plan", str(tmp_path / "bad.json")]) == 2
    assert "bad.json: not a job: " in capsys.readouterr().err


def test_plan_summary_is_a_table_of_text(repo_root: Path, tmp_path: Path) -> None:
    """A dry run's job summary: the plan as a markdown table, every cell plain text."""
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    assert main(["plan", "smoke", "--root", str(repo_root), "--summary", str(summary)]) == 0
    text = summary.read_text()
    assert text.startswith("earlier step\n### Plan of smoke: 4 jobs")  # appended
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 4 and "| 1,4,16 |" in text
    from infermatrix.plan.summary import summary_markdown

    hostile = fake_job(1).model_copy(update={"runner": "<img src=x>|*x*"})
    (row,) = [r for r in summary_markdown([hostile], "s").splitlines() if r.startswith("| job-1 ")]
    assert "&lt;img src=x&gt;\\|\\*x\\*" in row and row.count(" | ") == 5


def test_unknown_sweep_is_one_line(capsys: pytest.CaptureFixture[str], repo_root: Path) -> None:
    assert main(["plan", "nosuch", "--root", str(repo_root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("infermatrix: nosuch: unknown sweep (known: ") and "smoke" in err
    assert "\n" not in err


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=0, max_value=MATRIX_CAP * 8), max_shards=st.integers(1, 8))
def test_github_shards_cover_every_job_once(tmp_path_factory, n: int, max_shards: int) -> None:
    jobs = [fake_job(i) for i in range(n)]
    plan_dir = tmp_path_factory.mktemp("plan")
    if n > MATRIX_CAP * max_shards:
        with pytest.raises(CapacityError, match=f"{n} jobs exceed"):
            write_plan(jobs, plan_dir, max_shards)
        return
    path = plan_dir / "out"
    write_github_outputs(write_plan(jobs, plan_dir, max_shards), path)
    outputs = read_github_output(path)
    ids = json.loads(outputs["shards"])
    assert ids == list(range(int(outputs["shard_count"])))
    assert sorted(p.name for p in plan_dir.glob("shard-*.json")) \
        == sorted(f"shard-{i}.json" for i in ids)
    shards = [json.loads((plan_dir / f"shard-{i}.json").read_text()) for i in ids]
    assert all(0 < len(s) <= MATRIX_CAP for s in shards)
    assert [Job.model_validate(c) for s in shards for c in s] == jobs  # every job once, in order
    assert all(output_bytes(matrix_outputs([Job.model_validate(c) for c in s])["jobs"])
               <= github.OUTPUT_CAP for s in shards[:1])


def test_no_more_shards_than_one_matrix_holds(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """sweep.yml fans out over the shard ids with a matrix: 256 shards at most, whatever
    --max-shards asks (a huge one neither hangs nor passes GitHub's cap)."""
    monkeypatch.setattr(github, "RUN_OUTPUT_CAP", 10**12)  # the shard cap, not the bytes
    jobs = [fake_job(i) for i in range(MATRIX_CAP * MATRIX_CAP + 1)]
    with pytest.raises(CapacityError, match="65537 jobs exceed the workflow's capacity of 256"):
        write_plan(jobs, tmp_path, max_shards=10**30)


def test_a_new_plan_replaces_the_old_shard_files(tmp_path: Path) -> None:
    write_plan([fake_job(i) for i in range(600)], tmp_path)
    assert write_plan([fake_job(1)], tmp_path)["shards"] == "[0]"
    assert [p.name for p in tmp_path.glob("shard-*.json")] == ["shard-0.json"]


def test_shards_are_cut_to_githubs_output_limit(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """A shard's matrix is one job's outputs (1 MB, UTF-16): big jobs make smaller shards, and
    a plan past the run's 50 MB of outputs fails with one line before any job starts."""
    jobs = [fake_job(i) for i in range(100)]
    one = output_bytes(matrix_outputs(jobs[:1])["jobs"])
    monkeypatch.setattr(github, "OUTPUT_CAP", 10 * one)
    outputs = write_plan(jobs, tmp_path)
    assert int(outputs["shard_count"]) >= 10
    for i in json.loads(outputs["shards"]):
        part = [Job.model_validate(c) for c in json.loads((tmp_path / f"shard-{i}.json").read_text())]
        assert output_bytes(matrix_outputs(part, simulate=True)["jobs"]) <= github.OUTPUT_CAP
        assert output_bytes(matrix_outputs(part)["jobs"]) <= github.OUTPUT_CAP
    monkeypatch.setattr(github, "RUN_OUTPUT_CAP", 50 * one)
    with pytest.raises(CapacityError, match="100 jobs make .* bytes of shard matrices, over"):
        write_plan(jobs, tmp_path)


def test_capacity_error_is_one_line(capsys, repo_root: Path, tmp_path: Path) -> None:
    code = main(["plan", "nightly", "--root", str(repo_root), "--format", "github",
                 "--github-output", str(tmp_path / "o"), "--plan-dir", str(tmp_path / "p"),
                 "--max-shards", "0"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "jobs exceed the workflow's capacity of 0 shards" in err[0]


def test_sweep_tag_filters(repo_root: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "repo"
    for part in ("matrix", "benchmarks", "runners"):
        shutil.copytree(repo_root / part, root / part)
    (root / "matrix" / "sweeps" / "tagged.yaml").write_text(
        "entries:\n"
        "  - recipes: ['*']\n    tags: [inferencemax]\n    exclude_tags: [test]\n"
        "    workloads: [smoke-1k-128]\n    concurrency: [4]\n")
    cat = load_catalog(root)
    recipes = {job.recipe for job in plan_sweep(cat, "tagged")}
    tagged = {rid for rid, r in cat.recipes.items() if "inferencemax" in r.tags}
    assert recipes and recipes <= tagged
    # the nightly sweep leaves the tiny CPU and test-only recipes out
    nightly = {job.recipe for job in plan_sweep(load_catalog(repo_root), "nightly")}
    assert not {rid for rid in nightly if "test" in cat.recipes[rid].tags}
    # a tag filter that leaves nothing is a catalog error, named by file and field
    (root / "matrix" / "sweeps" / "tagged.yaml").write_text(
        "entries:\n  - recipes: ['*']\n    tags: [no-such-tag]\n"
        "    workloads: [smoke-1k-128]\n    concurrency: [4]\n")
    assert main(["validate", "--root", str(root)]) == 2


def test_matrix_fits_githubs_output_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cells are whole jobs: a matrix that would pass GitHub's 1 MB per job fails with one line
    instead of a workflow that silently loses its jobs."""
    jobs = [fake_job(i) for i in range(20)]
    size = output_bytes(matrix_outputs(jobs)["jobs"])
    monkeypatch.setattr(github, "OUTPUT_CAP", size - 1)
    with pytest.raises(CapacityError, match=f"20 jobs make {size:,} bytes of matrix"):
        matrix_outputs(jobs)
    with pytest.raises(CapacityError, match="one matrix holds at most 256"):
        matrix_outputs([fake_job(i) for i in range(MATRIX_CAP + 1)])


def test_a_job_says_its_levels_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A hand-edited job file whose levels disagree with its measurement is one line, exit 2."""
    job = fake_job(1).model_dump(mode="json")
    job["concurrency"] = [1, 2, 64]
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    assert main(["run", str(path), "--output-dir", str(tmp_path / "out"), "--engine", "sim"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "differs from the measurement's [1, 2]" in err
    assert not (tmp_path / "out").exists()
