"""sweep.yml's `simulate` and `dry_run` inputs, end to end: the workflow files themselves run by
a small Actions interpreter (gha.py): plan, shards, select, every job in virtual time,
collect and the preview, with the env, outputs, artifacts and conditions GitHub would give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gha import Run, runner_env

from infermatrix.catalog.loader import load_catalog
from infermatrix.plan.jobs import plan_sweep

pytestmark = pytest.mark.slow  # a dozen subprocesses; the smoke sweep's jobs in virtual time

GITHUB = {"run_id": 4242, "event_name": "workflow_dispatch", "repository": "o/r",
          "repository_owner": "o", "ref": "refs/heads/main",
          "event": {"repository": {"default_branch": "main"}}}


def dispatch(tmp_path: Path, repo_root: Path, **inputs: object) -> tuple[Run, dict]:
    form = {"sweep": "smoke", "model": "", "hardware": "", "engine": "", "workload": "",
            "dry_run": False, "simulate": False, "incremental": False, "max_age_days": 7,
            "fail_fast": False, **inputs}
    run = Run(root=tmp_path, checkout=repo_root, github=GITHUB, env=runner_env())
    return run, run.workflow("sweep.yml", form, secrets={"HF_TOKEN": ""})


def test_simulate_runs_the_whole_workflow_on_hosted_runners(repo_root: Path,
                                                            tmp_path: Path) -> None:
    run, needs = dispatch(tmp_path, repo_root, simulate=True)
    failed = [j for j in run.jobs if j["result"] != "success"]
    assert not failed, json.dumps(failed, indent=1, default=str)[-4000:]
    planned = plan_sweep(load_catalog(repo_root), "smoke")
    # plan -> one shard (select + a cell per job) -> collect; never a self-hosted runner
    ran = [(j["workflow"], j["job"]) for j in run.jobs]
    assert ran == [("sweep.yml", "plan"), ("job.yml", "select")] + \
        [("job.yml", "run")] * len(planned) + [("collect.yml", "collect")]
    assert {str(j["runs-on"]) for j in run.jobs} == {"ubuntu-latest"}
    assert [j["matrix"]["job"]["id"] for j in run.jobs if j["job"] == "run"] \
        == [j.id for j in planned]
    for cell in (j for j in run.jobs if j["job"] == "run"):  # the virtual-time step ran
        steps = dict(cell["steps"])
        assert steps["infermatrix run (fingerprint ${{ matrix.job.fingerprint }})"] == "skipped"
        assert next(v for k, v in steps.items() if "--virtual" in (k or "")) == "success"
    # every job's result travelled as an artifact, and the preview holds the site
    for job in planned:
        files = [p.name for p in run.artifacts[f"result-{job.id}"].rglob("*.json")]
        assert "manifest.json" in files and any(f.startswith("conc-") for f in files)
    assert (run.artifacts["preview-site"] / "index.html").is_file()
    # a preview, never Pages: no pages artifact, no deploy, publish skipped
    assert "github-pages" not in run.artifacts and run.pages == []
    assert needs["collect"]["result"] == "success"
    summary = "\n".join(run.summaries)
    assert f"### Plan of smoke: {len(planned)} jobs" in summary
    manifest = next(run.artifacts[f"result-{planned[0].id}"].rglob("manifest.json"))
    assert json.loads(manifest.read_text())["job"] == planned[0].model_dump(mode="json")


def test_a_dry_run_plans_and_shows_the_table(repo_root: Path, tmp_path: Path) -> None:
    run, needs = dispatch(tmp_path, repo_root, dry_run=True, sweep="nightly")
    assert [j["job"] for j in run.jobs] == ["plan"] and run.jobs[0]["result"] == "success"
    assert needs["shard"]["result"] == needs["collect"]["result"] == "skipped"
    jobs = plan_sweep(load_catalog(repo_root), "nightly")
    (summary,) = run.summaries
    assert summary.startswith(f"### Plan of nightly: {len(jobs)} jobs")
    assert all(f"| {j.id} |" in summary for j in jobs)
    assert sorted(p.name for p in run.artifacts["plan"].iterdir()) == ["shard-0.json"]
