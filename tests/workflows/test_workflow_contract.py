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


def sample_job() -> Job:
    return Job(id="m.r.w.h200-dgx-0123abcd", sweep="s", recipe="m/r", model="m", hardware="H200",
               engine="vllm", precision="fp8", mode="aggregated", workload="w", runner="h200-dgx",
               launcher="docker", concurrency=[1, 4, 16], gpus=8, nodes=1,
               fingerprint="0" * 16, timeout_minutes=45,
               measurement={"kind": "levels", "concurrency": [1, 4, 16]}, evals=[])


def test_one_shard_job_fans_out_over_the_planner_shards() -> None:
    doc = load("sweep.yml")
    shards = [job for job in doc["jobs"].values() if job.get("uses") == JOB_WORKFLOW_REF]
    assert len(shards) == 1, "one shard job, a matrix over the shards (no copies)"
    (job,) = shards
    assert job["strategy"]["matrix"] == {"shard": "${{ fromJSON(needs.plan.outputs.shards) }}"}
    assert job["with"]["jobs"] == "${{ needs.plan.outputs[format('shard_{0}', matrix.shard)] }}"
    assert job["needs"] == "plan" and "shard_count != '0'" in job["if"]
    # the shard outputs it indexes are exactly the planner's
    declared = doc["jobs"]["plan"]["outputs"]
    assert {f"shard_{i}" for i in range(MAX_SHARDS)} <= set(declared)
    assert "shard" in doc["jobs"]["collect"]["needs"]
    # job.yml fans the shard out: one cell per planned job, capped by the planner at MATRIX_CAP
    run = load("job.yml")["jobs"]["run"]
    assert run["strategy"]["matrix"] == {"include": "${{ fromJSON(inputs.jobs) }}"}


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


def test_matrix_cell_is_the_whole_planned_job() -> None:
    """job.yml reads only planned job fields from its matrix, and hands the whole cell on."""
    cell = matrix_entry(sample_job())
    assert Job.model_validate(cell) == sample_job()  # every field, the sweep and evals included
    job_doc = load("job.yml")
    used = references(job_doc, "matrix")
    assert used and used <= set(cell), f"not produced by the planner: {sorted(used - set(cell))}"
    assert job_doc["jobs"]["run"]["env"]["JOB"] == "${{ toJSON(matrix) }}"
    assert references(load("sweep.yml"), "matrix") == {"shard"}


def test_reusable_inputs_are_declared_passed_and_used() -> None:
    sweep = load("sweep.yml")
    for name in ("job.yml", "collect.yml"):
        doc = load(name)
        declared = doc["on"]["workflow_call"]["inputs"]
        assert references(doc, "inputs") == set(declared), f"{name}: declared and used differ"
        callers = [j for j in sweep["jobs"].values() if j.get("uses", "").endswith(name)]
        assert len(callers) == 1, name
        assert set(callers[0]["with"]) == set(declared), f"{name}: passed {callers[0]['with']}"
        assert all(spec.get("required") is True for spec in declared.values())
        secrets = doc["on"]["workflow_call"].get("secrets", {})
        assert set(callers[0].get("secrets", {})) <= set(secrets)


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
    for name in ("sweep.yml", "job.yml", "collect.yml"):
        doc = load(name)
        for job_name, job in doc["jobs"].items():
            ids = {s["id"] for s in job.get("steps", []) if "id" in s}
            for expr in expressions(job):
                for step_id in re.findall(r"steps\.([\w-]+)\.", expr):
                    assert step_id in ids, f"{name}:{job_name} reads unknown step {step_id}"


def _sample_argv(argv: list[str]) -> list[str]:
    """Stand-ins for the shell variables of a workflow command, split as the shell would."""
    samples = {"$INCREMENTAL": ["true"],
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
    for wf in ("sweep.yml", "job.yml", "collect.yml", "ci.yml"):
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
    assert [Job.model_validate(c) for c in cells] == jobs  # whole jobs, every field
    assert json.loads(values["shards"]) == list(range(int(values["shard_count"])))
    assert any(j.capacity is not None for j in jobs)  # the nightly runs agentic capacity too


def test_job_file_runs_the_planned_job_unchanged(repo_root: Path, tmp_path: Path) -> None:
    """job.yml writes the matrix cell to job.json for `infermatrix run`: the job read back is the
    planner's job, every field (sweep, measurement, eval plan) included."""
    from infermatrix.commands.run import _job_from_file

    cat = load_catalog(repo_root)
    jobs = plan_sweep(cat, "smoke") + plan_sweep(cat, "aa-agentperf")
    values = github_outputs(jobs)
    cells = [c for i in json.loads(values["shards"]) for c in json.loads(values[f"shard_{i}"])]
    assert len(cells) == len(jobs)
    for job, cell in zip(jobs, cells, strict=True):
        path = tmp_path / "job.json"
        path.write_text(json.dumps(cell, indent=2))  # toJSON(matrix) pretty-prints
        assert _job_from_file(path, None) == job


def test_run_flags_build_the_planned_job(repo_root: Path) -> None:
    """A job named by hand (`run --recipe --workload`) is the planner's job, every field."""
    from infermatrix.commands.run import _job_from_flags

    cat = load_catalog(repo_root)
    for job in plan_sweep(cat, "smoke") + plan_sweep(cat, "aa-agentperf"):
        argv = ["run", "--recipe", job.recipe, "--workload", job.workload]
        if cat.recipes[job.recipe].launch_per_concurrency and job.capacity is None:
            argv += ["--concurrency", str(job.concurrency[0])]  # a per-level job: name its level
        assert _job_from_flags(cat, build_parser().parse_args(argv)) == job
