"""`infermatrix sweep --local` and the GitHub workflows run the same CLI stages, in order."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from imx_workflows import infermatrix_stages

import infermatrix.report
from infermatrix.cli import main
from infermatrix.commands import sweep as sweep_cli


def ci_stages() -> list[str]:
    """The stages sweep.yml runs; check-runner is a runner's set-up, no stage of a sweep."""
    return [s for s in infermatrix_stages("sweep.yml") if s != "check-runner"]


def test_workflow_stages_are_the_sweep_stages() -> None:
    ci = ci_stages()
    assert ci[:2] == ["validate", "plan"]
    local_view = [s for s in ci if s not in sweep_cli.CI_ONLY_STAGES]
    assert local_view == list(sweep_cli.STAGES), (
        f"sweep.yml + job.yml run {ci}; `infermatrix sweep` runs {list(sweep_cli.STAGES)} "
        f"(CI-only: {list(sweep_cli.CI_ONLY_STAGES)})")
    assert set(sweep_cli.CI_ONLY_STAGES) <= set(ci)


def test_the_run_stage_is_job_yml() -> None:
    """`run` happens once per matrix cell, through the reusable job.yml, and only there (after
    its select job reads the shard's plan file: part of the plan stage)."""
    assert infermatrix_stages("job.yml") == ["plan", "check-runner", "run"]
    for name in ("sweep.yml", "collect.yml", "ci.yml"):
        assert "run" not in infermatrix_stages(name, expand_calls=False), name


def test_sweep_local_runs_its_stages_in_order(
        repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    """Run the real `infermatrix sweep --local` (servers and report stubbed) and trace it."""
    ran: list[str] = []

    def fake_execute(cat, job, run_dir, run_id, args):  # noqa: ANN001, ANN202
        ran.append(job.id)
        return SimpleNamespace(status="ok", error=None, job_dir=run_dir / "jobs" / job.id, levels=[])

    monkeypatch.setattr(sweep_cli, "execute", fake_execute)
    monkeypatch.setattr(infermatrix.report, "build_run_report", lambda run_dir, **_: {}, raising=False)
    code = main(["sweep", "smoke", "--local", "--engine", "sglang", "--output-dir", str(tmp_path),
                 "--run-id", "parity", "--root", str(repo_root)])
    err = capsys.readouterr().err
    assert code == 0, err
    traced = [line[3:].strip() for line in err.splitlines() if line.startswith("== ")]
    assert traced == list(sweep_cli.STAGES)
    assert ran and all("sglang" in job_id for job_id in ran)  # the --engine filter applied
    assert [s for s in ci_stages() if s not in sweep_cli.CI_ONLY_STAGES] == traced
