"""Security rules of issue #8, checked on the parsed workflows (zizmor checks more, see lint)."""

from __future__ import annotations

import re

import pytest
from imx_workflows import all_workflows, load, run_steps, uses_lines, walk_strings

SHA_PIN = re.compile(r"uses:\s*[\w.-]+/[\w./-]+@[0-9a-f]{40}\s+#\s*v\d+(\.\d+)*\s*$")
LOCAL = re.compile(r"uses:\s*(\./|\$/)")
# What a thin step may run besides `infermatrix`: set-up only.
SETUP_COMMANDS = {("python", "-m", "pip", "install"), ("curl",), ("ruff", "check"),
                  ("python", "-m", "pytest"), ("bash", "scripts/lint-workflows.sh")}
ALLOWED_WRITES = {("collect.yml", "publish"): {"pages", "id-token"},
                  ("sweep.yml", "collect"): {"pages", "id-token"}}  # the call grants publish's


def test_there_are_the_workflows_of_the_issue() -> None:
    assert {"sweep.yml", "job.yml", "ci.yml"} <= set(all_workflows())


@pytest.mark.parametrize("name", all_workflows())
def test_permissions_are_minimal(name: str) -> None:
    doc = load(name)
    assert "permissions" in doc, f"{name}: no top-level permissions"
    assert doc["permissions"] in ({}, {"contents": "read"}), doc["permissions"]
    for job_name, job in doc["jobs"].items():
        perms = job.get("permissions")
        assert perms is not None, f"{name}:{job_name} inherits instead of declaring permissions"
        assert isinstance(perms, dict), f"{name}:{job_name}: permissions must be a mapping"
        writes = {k for k, v in perms.items() if v == "write"}
        assert writes <= ALLOWED_WRITES.get((name, job_name), set()), (name, job_name, writes)
        assert set(perms) - writes <= {"contents", "actions"}, (name, job_name, perms)


def test_pages_deploy_only_from_the_default_branch() -> None:
    publish = load("collect.yml")["jobs"]["publish"]
    assert "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)" \
        in publish["if"]
    # a scheduled run's github.event has no repository: it is let through by event name
    # (GitHub runs schedules on the default branch only)
    assert "github.event_name == 'schedule'" in publish["if"]
    for name in ("sweep.yml", "collect.yml"):
        rest = {k: v for k, v in load(name).items() if k != "jobs"}
        jobs = {k: v for k, v in load(name)["jobs"].items() if k != "publish"}
        assert not any("github.event.repository" in s for s in walk_strings([rest, jobs]))
    assert publish["environment"]["name"] == "github-pages"


@pytest.mark.parametrize("name", all_workflows())
def test_actions_are_pinned_to_full_shas(name: str) -> None:
    lines = uses_lines(name)
    assert lines
    for lineno, line in lines:
        assert LOCAL.search(line) or SHA_PIN.search(line), \
            f"{name}:{lineno}: pin to a 40-hex commit SHA with `# vX.Y.Z`: {line.strip()}"


@pytest.mark.parametrize("name", all_workflows())
def test_no_expression_inside_run_scripts(name: str) -> None:
    for step in run_steps(name, expand_calls=False):
        assert "${{" not in step.script, f"{name}:{step.job}:{step.name}: pass values via env:"


@pytest.mark.parametrize("name", all_workflows())
def test_no_dangerous_triggers(name: str) -> None:
    triggers = load(name)["on"]
    assert "pull_request_target" not in triggers and "workflow_run" not in triggers


def test_concurrency_groups() -> None:
    sweep = load("sweep.yml")["concurrency"]
    assert sweep["cancel-in-progress"] is False  # a queued sweep never kills a running one
    assert "github.ref" not in sweep["group"], "one GPU queue for every branch, not one per ref"
    assert load("ci.yml")["concurrency"]["group"]


@pytest.mark.parametrize("name", all_workflows())
def test_checkout_does_not_persist_credentials(name: str) -> None:
    for job in load(name)["jobs"].values():
        for step in job.get("steps", []):
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step.get("with", {}).get("persist-credentials") is False


def test_secrets_only_where_needed() -> None:
    sweep = load("sweep.yml")
    for job_name, job in sweep["jobs"].items():
        outside = {k: v for k, v in job.items() if k != "secrets"}
        assert not any("secrets." in s for s in walk_strings(outside)), job_name
        for value in job.get("secrets", {}).values():
            assert value == "${{ secrets.HF_TOKEN }}"
        assert job.get("secrets") != "inherit"
    assert not any("secrets." in s for s in walk_strings(sweep.get("env", {})))
    job_doc = load("job.yml")
    run = job_doc["jobs"]["run"]
    assert not any("secrets." in s for s in walk_strings(job_doc["jobs"]["select"]))
    assert not any("secrets." in s for s in walk_strings(job_doc.get("env", {})))
    assert not any("secrets." in s for s in walk_strings(run.get("env", {})))
    holders = [s for s in run["steps"] if any("secrets." in v for v in walk_strings(s))]
    assert len(holders) == 1 and holders[0]["env"] == {"HF_TOKEN": "${{ secrets.HF_TOKEN }}"}
    assert holders[0]["run"].lstrip().splitlines()[-1].startswith("infermatrix run ")
    assert not any("secrets." in s for s in walk_strings(load("ci.yml")))


@pytest.mark.parametrize("name", ["sweep.yml", "job.yml", "collect.yml", "ci.yml"])
def test_run_steps_are_thin(name: str) -> None:
    """Every run step is one `infermatrix …` call, or set-up; no shell logic."""
    for step in run_steps(name, expand_calls=False):
        commands = step.commands()
        assert len(commands) == 1, f"{name}:{step.name}: one command per step"
        argv = commands[0]
        assert argv[0] == "infermatrix" or any(tuple(argv[:len(p)]) == p for p in SETUP_COMMANDS), \
            f"{name}:{step.name}: not a thin call: {argv[:4]}"
        assert not {"&&", "||", ";", "|", "if", "for", "then"} & set(argv), step.name


def test_self_hosted_runners_only_in_the_job_workflow() -> None:
    """Only job.yml's run job reaches a self-hosted runner: the labels its matrix cell carries,
    [self-hosted, <fleet label>] from the planner, or ubuntu-latest for a simulated sweep."""
    from infermatrix.plan.github import runs_on
    from infermatrix.plan.jobs import Job

    jobs = load("job.yml")["jobs"]
    assert jobs["run"]["runs-on"] == "${{ matrix.runs_on }}"
    assert "matrix.job.timeout_minutes" in str(jobs["run"]["timeout-minutes"])
    assert jobs["select"]["runs-on"] == "ubuntu-latest"
    job = Job.model_construct(runner="h200-dgx")
    assert runs_on(job, simulate=False) == ["self-hosted", "h200-dgx"]
    assert runs_on(job, simulate=True) == "ubuntu-latest"
    for name in ("sweep.yml", "collect.yml", "ci.yml"):
        for job_name, job in load(name)["jobs"].items():
            if "runs-on" in job:
                assert job["runs-on"] == "ubuntu-latest", (name, job_name)
