"""The workflows and the planner agree: shard jobs, matrix keys, inputs, outputs, CLI flags."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from imx_workflows import (
    JOB_WORKFLOW_REF,
    expressions,
    load,
    references,
    run_steps,
)

from infermatrix.catalog.loader import load_catalog
from infermatrix.cli import OWN, PASSTHROUGH, build_parser
from infermatrix.plan.github import MATRIX_CAP, MAX_SHARDS, github_outputs, matrix_entry
from infermatrix.plan.jobs import Job, plan_sweep

SHARD_OUTPUT = re.compile(r"fromJSON\(needs\.plan\.outputs\.(shard_\d+)\)")


def sample_job() -> Job:
    return Job(id="m.r.w.h200-dgx-0123abcd", sweep="s", recipe="m/r", model="m", hardware="H200",
               engine="vllm", precision="fp8", mode="aggregated", workload="w", runner="h200-dgx",
               launcher="docker", concurrency=[1, 4, 16], gpus=8, nodes=1,
               fingerprint="0" * 16, timeout_minutes=45)


def shard_jobs(doc: dict) -> dict[str, dict]:
    return {name: job for name, job in doc["jobs"].items() if job.get("uses") == JOB_WORKFLOW_REF}


def test_shard_jobs_match_the_planner_limit() -> None:
    doc = load("sweep.yml")
    shards = shard_jobs(doc)
    assert len(shards) == MAX_SHARDS, f"sweep.yml declares {len(shards)} shard jobs, planner {MAX_SHARDS}"
    read = []
    for name, job in shards.items():
        include = job["strategy"]["matrix"]["include"]
        (output,) = SHARD_OUTPUT.findall(include)
        assert name == output, f"job {name} reads {output}"
        assert f"needs.plan.outputs.{output} != '[]'" in job["if"], f"{name} runs on an empty shard"
        assert job["needs"] == "plan"
        read.append(output)
    assert sorted(read) == sorted(f"shard_{i}" for i in range(MAX_SHARDS))
    # every job that needs all the shards names each of them
    collect = doc["jobs"]["collect"]
    assert set(shards) <= set(collect["needs"])


def test_plan_outputs_are_exactly_what_the_planner_writes() -> None:
    doc = load("sweep.yml")
    declared = doc["jobs"]["plan"]["outputs"]
    written = github_outputs([sample_job()])
    assert set(declared) == set(written)
    for key, value in declared.items():
        assert value == f"${{{{ steps.plan.outputs.{key} }}}}", key
    plan_step = next(s for s in doc["jobs"]["plan"]["steps"] if s.get("id") == "plan")
    argv = shlex.split(plan_step["run"])
    assert argv[:2] == ["infermatrix", "plan"] and "--format" in argv
    assert argv[argv.index("--format") + 1] == "github"
    # everything read from needs.plan.outputs anywhere is declared
    assert references(doc, "needs.plan.outputs") <= set(declared)


def test_matrix_references_are_matrix_cell_keys() -> None:
    doc = load("sweep.yml")
    cell = matrix_entry(sample_job())
    used = references(doc, "matrix")
    assert used, "sweep.yml reads no matrix value"
    assert used <= set(cell), f"not produced by the planner: {sorted(used - set(cell))}"
    assert references(load("job.yml"), "matrix") == set()


def test_job_yml_inputs_are_declared_passed_and_used() -> None:
    job_doc = load("job.yml")
    declared = job_doc["on"]["workflow_call"]["inputs"]
    assert references(job_doc, "inputs") == set(declared), "declared inputs and used inputs differ"
    cell = matrix_entry(sample_job())
    for name, job in shard_jobs(load("sweep.yml")).items():
        passed = job["with"]
        assert set(passed) == set(declared), f"{name} passes {sorted(passed)}"
        for key, value in passed.items():
            m = re.fullmatch(r"\$\{\{ matrix\.(\w+) \}\}", str(value))
            if m:
                assert m.group(1) in cell, f"{name}.with.{key} reads unknown matrix.{m.group(1)}"
                # the cell's JSON type fits the input's declared type
                kind = declared[key]["type"]
                expected = {"number": int, "string": str, "boolean": bool}[kind]
                assert isinstance(cell[m.group(1)], expected), (key, kind)
        assert set(job.get("secrets", {})) <= set(job_doc["on"]["workflow_call"].get("secrets", {}))
    for spec in declared.values():
        assert spec.get("required") is True


def test_sweep_inputs_are_declared() -> None:
    doc = load("sweep.yml")
    declared = doc["on"]["workflow_dispatch"]["inputs"]
    assert {"sweep", "model", "hardware", "engine", "workload", "dry_run", "incremental",
            "fail_fast"} <= set(declared)
    assert {k: v["type"] for k, v in declared.items() if k in ("dry_run", "incremental", "fail_fast")} \
        == {"dry_run": "boolean", "incremental": "boolean", "fail_fast": "boolean"}
    used = references(doc, "inputs")
    assert used <= set(declared), f"undeclared: {sorted(used - set(declared))}"
    assert used == set(declared), f"declared but never used: {sorted(set(declared) - used)}"
    assert "schedule" in doc["on"] and doc["on"]["schedule"][0]["cron"]
    plan_env = doc["jobs"]["plan"]["env"]
    # incremental is forced on for the nightly schedule
    assert "github.event_name == 'schedule'" in plan_env["INCREMENTAL"]


def test_step_outputs_read_are_written() -> None:
    for name in ("sweep.yml", "job.yml"):
        doc = load(name)
        for job_name, job in doc["jobs"].items():
            ids = {s["id"] for s in job.get("steps", []) if "id" in s}
            for expr in expressions(job):
                for step_id in re.findall(r"steps\.([\w-]+)\.", expr):
                    assert step_id in ids, f"{name}:{job_name} reads unknown step {step_id}"


def _sample_argv(argv: list[str]) -> list[str]:
    """Stand-ins for the shell variables of a workflow command, split as the shell would."""
    samples = {"$CONCURRENCY": ["1", "4", "16"], "$INCREMENTAL": ["true"],
               "$MAX_AGE_DAYS": ["7"], "$SWEEP": ["nightly"]}
    out: list[str] = []
    for token in argv:
        if token in samples:
            out.extend(samples[token])
        else:
            out.append(re.sub(r"\$\{?(\w+)\}?", "sample", token))
    return out


def infermatrix_commands() -> list[tuple[str, list[str]]]:
    found = []
    for wf in ("sweep.yml", "job.yml", "ci.yml"):
        for step in run_steps(wf, expand_calls=False):
            for argv in step.commands():
                if argv and argv[0] == "infermatrix":
                    argv = [t for t in argv if t not in (">>", ">")]
                    if "$GITHUB_STEP_SUMMARY" in argv:  # the redirect's target
                        argv.remove("$GITHUB_STEP_SUMMARY")
                    found.append((f"{wf}: {step.name}", _sample_argv(argv[1:])))
    return found


@pytest.mark.parametrize(("where", "argv"), infermatrix_commands(), ids=lambda v: str(v)[:60])
def test_workflow_commands_parse(where: str, argv: list[str], capsys: pytest.CaptureFixture) -> None:
    """Every `infermatrix` call in the workflows is accepted by the CLI it calls."""
    command = argv[0]
    if command in OWN:
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            pytest.fail(f"{where}: `infermatrix {' '.join(argv)}` is rejected: "
                        f"{capsys.readouterr().err.strip()}")
        return
    assert command in PASSTHROUGH, f"{where}: unknown subcommand {command}"
    module, func, _ = PASSTHROUGH[command]
    try:
        entry = getattr(__import__(module, fromlist=[func]), func)
    except (ImportError, AttributeError):
        pytest.skip(f"{module}.{func} is not built yet")
    with pytest.raises(SystemExit):
        entry(["--help"])
    usage = capsys.readouterr().out
    for flag in (a.split("=")[0] for a in argv[1:] if a.startswith("-")):
        assert flag in usage, f"{where}: `infermatrix {command}` has no {flag}"


def test_nightly_plan_fits_the_shards(repo_root: Path, tmp_path: Path) -> None:
    """The plan step's exact script, run as GitHub runs it, on the real nightly sweep."""
    doc = load("sweep.yml")
    step = next(s for s in doc["jobs"]["plan"]["steps"] if s.get("id") == "plan")
    out = tmp_path / "github_output"
    env = {**os.environ, "SWEEP": "nightly", "FILTER_MODEL": "*", "FILTER_HARDWARE": "*",
           "FILTER_ENGINE": "*", "FILTER_WORKLOAD": "*", "INCREMENTAL": "false",
           "MAX_AGE_DAYS": "7", "GITHUB_OUTPUT": str(out),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["bash", "-c", step["run"]], env=env, cwd=repo_root, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    values = {k: v for k, _, v in re.findall(r"^(\w+)<<(EOF_\w+)\n(.*?)\n\2$", text, re.S | re.M)}
    jobs = plan_sweep(load_catalog(repo_root), "nightly")
    assert int(values["jobs_total"]) == len(jobs) > 0
    cells = [c for i in range(MAX_SHARDS) for c in json.loads(values[f"shard_{i}"])]
    assert all(len(json.loads(values[f"shard_{i}"])) <= MATRIX_CAP for i in range(MAX_SHARDS))
    assert [c["id"] for c in cells] == [j.id for j in jobs]
    used = references(doc, "matrix")
    assert all(used <= set(c) for c in cells)


def _flag_job(cat, job: Job) -> Job:  # noqa: ANN001
    """The job `infermatrix run` builds from job.yml's flags for one matrix cell."""
    cell = matrix_entry(job)
    args = build_parser().parse_args([
        "run", "--recipe", str(cell["recipe"]), "--workload", str(cell["workload"]),
        "--runner-label", str(cell["runner"]), "--concurrency", *str(cell["concurrency"]).split()])
    from infermatrix.launch.cli import _job_from_flags
    return _job_from_flags(cat, args)


def test_run_flags_measure_the_planned_job(repo_root: Path) -> None:
    """What the incremental nightly relies on: a cell run through job.yml's flags records the
    planner's fingerprint."""
    cat = load_catalog(repo_root)
    for job in plan_sweep(cat, "smoke") + plan_sweep(cat, "nightly"):
        flagged = _flag_job(cat, job)
        assert (flagged.recipe, flagged.workload, flagged.runner, flagged.concurrency,
                flagged.fingerprint) == (job.recipe, job.workload, job.runner, job.concurrency,
                                         job.fingerprint)


def test_run_flags_rebuild_the_planned_job_exactly(repo_root: Path) -> None:
    """The same id (a per-concurrency job keeps its `.c<N>` suffix), nodes and time-out."""
    cat = load_catalog(repo_root)
    for job in plan_sweep(cat, "smoke"):
        flagged = _flag_job(cat, job)
        assert (flagged.id, flagged.nodes, flagged.timeout_minutes) == \
            (job.id, job.nodes, job.timeout_minutes)
