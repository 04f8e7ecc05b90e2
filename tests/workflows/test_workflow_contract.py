"""The workflows and the planner agree: shard jobs, matrix keys, inputs, outputs, CLI flags."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gha import read_outputs
from imx_workflows import (
    JOB_WORKFLOW_REF,
    expressions,
    load,
    references,
    run_steps,
)

from infermatrix.catalog.loader import load_catalog
from infermatrix.cli import OWN, PASSTHROUGH, build_parser
from infermatrix.plan.github import MATRIX_CAP, matrix_outputs, runs_on, write_plan
from infermatrix.plan.jobs import Job, plan_sweep


def sample_job() -> Job:
    return Job(id="m.r.w.h200-dgx-0123abcd", sweep="s", recipe="m/r", model="m", hardware="H200",
               engine="vllm", precision="fp8", mode="aggregated", workload="w", runner="h200-dgx",
               launcher="docker", concurrency=[1, 4, 16], gpus=8, nodes=1,
               fingerprint="0" * 16, timeout_minutes=45,
               measurement={"kind": "levels", "concurrency": [1, 4, 16]}, evals=[])


def _step(doc: dict, job: str, step_id: str) -> dict:
    return next(s for s in doc["jobs"][job]["steps"] if s.get("id") == step_id)


def _uses(doc: dict, job: str, action: str) -> list[dict]:
    return [s for s in doc["jobs"][job]["steps"] if str(s.get("uses", "")).startswith(action)]


def test_one_shard_job_fans_out_over_the_planner_shard_ids() -> None:
    doc = load("sweep.yml")
    shards = [job for job in doc["jobs"].values() if job.get("uses") == JOB_WORKFLOW_REF]
    assert len(shards) == 1, "one shard job, a matrix over the shard ids (no copies)"
    (job,) = shards
    assert job["strategy"]["matrix"] == {"shard": "${{ fromJSON(needs.plan.outputs.shards) }}"}
    assert job["with"]["shard"] == "${{ matrix.shard }}"  # an id: the jobs are in the artifact
    assert job["needs"] == "plan" and "shard_count != '0'" in job["if"]
    assert "shard" in doc["jobs"]["collect"]["needs"]
    # job.yml: select turns the shard into a matrix, run fans out over it (one cell per job)
    job_doc = load("job.yml")
    assert job_doc["on"]["workflow_call"]["inputs"]["shard"]["type"] == "number"
    run = job_doc["jobs"]["run"]
    assert run["needs"] == "select"
    assert run["strategy"]["matrix"] == {"include": "${{ fromJSON(needs.select.outputs.jobs) }}"}
    assert job_doc["jobs"]["select"]["outputs"] == {"jobs": "${{ steps.matrix.outputs.jobs }}"}


def test_the_plan_travels_as_an_artifact() -> None:
    """sweep.yml uploads the plan files the planner writes; job.yml's select job downloads that
    artifact and reads its shard's file; outputs carry ids and counts, never jobs."""
    sweep, job_doc = load("sweep.yml"), load("job.yml")
    argv = shlex.split(_step(sweep, "plan", "plan")["run"])
    plan_dir = argv[argv.index("--plan-dir") + 1]
    (upload,) = _uses(sweep, "plan", "actions/upload-artifact@")
    assert upload["with"]["path"] == f"{plan_dir}/shard-*.json"
    assert upload["with"]["if-no-files-found"] == "error"
    (download,) = _uses(job_doc, "select", "actions/download-artifact@")
    assert download["with"]["name"] == upload["with"]["name"] == "plan"
    select = shlex.split(_step(job_doc, "select", "matrix")["run"])
    assert select[-2:] == ["--", f"{download['with']['path']}/shard-$SHARD.json"]
    assert job_doc["jobs"]["select"]["env"]["SHARD"] == "${{ inputs.shard }}"


def test_plan_outputs_are_exactly_what_the_planner_writes(tmp_path: Path) -> None:
    doc = load("sweep.yml")
    declared = doc["jobs"]["plan"]["outputs"]
    written = write_plan([sample_job()], tmp_path)
    assert set(declared) == set(written) == {"jobs_total", "shard_count", "shards"}
    for key, value in declared.items():
        assert value == f"${{{{ steps.plan.outputs.{key} }}}}", key
    argv = shlex.split(_step(doc, "plan", "plan")["run"])
    assert argv[:2] == ["infermatrix", "plan"] and "--format" in argv
    assert argv[argv.index("--format") + 1] == "github"
    # everything read from needs.plan.outputs anywhere is declared
    assert references(doc, "needs.plan.outputs") <= set(declared)
    # job.yml's select job: the planner's matrix outputs, read by the run job
    job_doc = load("job.yml")
    assert set(job_doc["jobs"]["select"]["outputs"]) <= set(matrix_outputs([sample_job()]))
    assert references(job_doc, "needs.select.outputs") == {"jobs"}


def test_matrix_cell_is_the_whole_planned_job() -> None:
    """job.yml reads only planned job fields from its matrix, and hands the whole job on."""
    (cell,) = json.loads(matrix_outputs([sample_job()])["jobs"])
    assert set(cell) == {"job", "runs_on"}
    assert Job.model_validate(cell["job"]) == sample_job()  # every field, sweep and evals too
    job_doc = load("job.yml")
    assert references(job_doc, "matrix") == set(cell)
    used = references(job_doc, "matrix.job")
    assert used and used <= set(cell["job"]), f"not planned: {sorted(used - set(cell['job']))}"
    assert job_doc["jobs"]["run"]["env"]["JOB"] == "${{ toJSON(matrix.job) }}"
    assert job_doc["jobs"]["run"]["runs-on"] == "${{ matrix.runs_on }}"
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
    assert {"sweep", "model", "hardware", "engine", "workload", "dry_run", "simulate",
            "incremental", "max_age_days", "fail_fast"} <= set(declared)
    assert {k: v["type"] for k, v in declared.items() if k != "sweep" and v["type"] != "string"} \
        == {"dry_run": "boolean", "simulate": "boolean", "incremental": "boolean",
            "fail_fast": "boolean", "max_age_days": "number"}
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
    samples = {"$INCREMENTAL": "true", "$SIMULATE": "true", "$MAX_AGE_DAYS": "7",
               "$SWEEP": "nightly"}
    out: list[str] = []
    for token in argv:
        flag, eq, value = token.partition("=")
        if token in samples or value in samples:
            out.append(f"{flag}={samples[value]}" if eq else samples[token])
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


def _run_script(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-c", script], env=full, cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


def test_nightly_plan_fits_the_shards(repo_root: Path, tmp_path: Path) -> None:
    """The plan step's exact script, run as GitHub runs it, on the real nightly sweep; then
    job.yml's select step on each shard file it wrote."""
    sweep, job_doc = load("sweep.yml"), load("job.yml")
    work = tmp_path / "checkout"
    for part in ("matrix", "runners", "benchmarks"):
        shutil.copytree(repo_root / part, work / part)
    out, summary = tmp_path / "github_output", tmp_path / "summary.md"
    proc = _run_script(_step(sweep, "plan", "plan")["run"], work, SWEEP="nightly",
                       FILTER_MODEL="*", FILTER_HARDWARE="*", FILTER_ENGINE="*",
                       FILTER_WORKLOAD="*", INCREMENTAL="false", MAX_AGE_DAYS="7",
                       GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(summary))
    assert proc.returncode == 0, proc.stderr
    values = read_outputs(out)
    assert set(values) == {"jobs_total", "shard_count", "shards"}
    jobs = plan_sweep(load_catalog(repo_root), "nightly")
    assert int(values["jobs_total"]) == len(jobs) > 0
    assert json.loads(values["shards"]) == list(range(int(values["shard_count"])))
    assert f"### Plan of nightly: {len(jobs)} jobs" in summary.read_text()
    cells = []
    for shard in json.loads(values["shards"]):
        matrix = tmp_path / f"matrix-{shard}"
        proc = _run_script(_step(job_doc, "select", "matrix")["run"], work, SHARD=str(shard),
                           SIMULATE="false", GITHUB_OUTPUT=str(matrix))
        assert proc.returncode == 0, proc.stderr
        part = json.loads(read_outputs(matrix)["jobs"])
        assert 0 < len(part) <= MATRIX_CAP
        cells += part
    assert [Job.model_validate(c["job"]) for c in cells] == jobs  # whole jobs, every field
    assert [c["runs_on"] for c in cells] == [["self-hosted", j.runner] for j in jobs]
    assert any(j.capacity is not None for j in jobs)  # the nightly runs agentic capacity too


def test_job_file_runs_the_planned_job_unchanged(repo_root: Path, tmp_path: Path) -> None:
    """job.yml hands the matrix cell's job to `infermatrix run` (toJSON(matrix.job)): the job
    read back is the planner's job, every field (sweep, measurement, eval plan) included."""
    from infermatrix.commands.run import _job_from_file

    cat = load_catalog(repo_root)
    jobs = plan_sweep(cat, "smoke") + plan_sweep(cat, "aa-agentperf")
    cells = json.loads(matrix_outputs(jobs)["jobs"])
    assert len(cells) == len(jobs)
    for job, cell in zip(jobs, cells, strict=True):
        path = tmp_path / "job.json"
        path.write_text(json.dumps(cell["job"], indent=2))  # toJSON pretty-prints
        assert _job_from_file(path, None) == job
        assert cell["runs_on"] == runs_on(job, simulate=False) == ["self-hosted", job.runner]
    assert {c["runs_on"] for c in json.loads(matrix_outputs(jobs, True)["jobs"])} \
        == {"ubuntu-latest"}


def test_sweep_choice_lists_every_sweep(repo_root: Path) -> None:
    """The dispatch form offers exactly the sweeps of matrix/sweeps/ (a new sweep file needs
    its line in sweep.yml, and a removed one leaves no dead choice)."""
    sweep = load("sweep.yml")["on"]["workflow_dispatch"]["inputs"]["sweep"]
    assert sweep["type"] == "choice"
    stems = sorted(p.stem for p in (repo_root / "matrix" / "sweeps").glob("*.y*ml"))
    assert sorted(sweep["options"]) == stems == sorted(load_catalog(repo_root).sweeps)
    assert sweep["default"] == "nightly" in stems


def test_run_flags_build_the_planned_job(repo_root: Path) -> None:
    """A job named by hand (`run --recipe --workload`) is the planner's job, every field."""
    from infermatrix.commands.run import _job_from_flags

    cat = load_catalog(repo_root)
    for job in plan_sweep(cat, "smoke") + plan_sweep(cat, "aa-agentperf"):
        argv = ["run", "--recipe", job.recipe, "--workload", job.workload]
        if cat.recipes[job.recipe].launch_per_concurrency and job.capacity is None:
            argv += ["--concurrency", str(job.concurrency[0])]  # a per-level job: name its level
        assert _job_from_flags(cat, build_parser().parse_args(argv)) == job


@pytest.mark.parametrize(("event", "inputs", "expected"), [
    ("schedule", {}, {"SWEEP": "nightly", "INCREMENTAL": "true", "MAX_AGE_DAYS": "7"}),
    ("workflow_dispatch", {"sweep": "smoke", "incremental": False, "max_age_days": 0},
     {"SWEEP": "smoke", "INCREMENTAL": "false", "MAX_AGE_DAYS": "0"}),
    ("workflow_dispatch", {"sweep": "smoke", "incremental": True, "max_age_days": 2.5},
     {"SWEEP": "smoke", "INCREMENTAL": "true", "MAX_AGE_DAYS": "2.5"}),
])
def test_plan_env_as_github_evaluates_it(event: str, inputs: dict, expected: dict) -> None:
    """The plan job's env, by GitHub's expression rules: a schedule has no inputs (the nightly,
    incremental, 7 days); a dispatched max_age_days of 0 stays 0."""
    from gha import evaluate, to_str

    env = evaluate(load("sweep.yml")["jobs"]["plan"]["env"],
                   {"github": {"event_name": event}, "inputs": inputs})
    assert {k: to_str(env[k]) for k in expected} == expected
    assert {env[f"FILTER_{k}"] for k in ("MODEL", "HARDWARE", "ENGINE", "WORKLOAD")} == {"*"}
