"""Ids name folders: a job file's id, --run-id and a recipe's file name are safe file names or
the command stops with one line and exit 2, having written nothing outside its folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from infermatrix.cli import main

RECIPE = "llama-3.1-70b-instruct/h200-vllm-fp8"
UNSAFE_IDS = ["../../escape", "../escape", "a/../../b", "/tmp/abs", "..", ".hidden", "-rf",
              "s3\ntouch PWNED;#", "a b", "a;b", "$(touch PWNED)", "x" * 201, ""]


def _job(tmp_path: Path, job_id: str) -> Path:
    """A job file of the smoke plan with its id replaced."""
    job = {"id": job_id, "sweep": "smoke", "recipe": RECIPE, "model": "llama-3.1-70b-instruct",
           "hardware": "H200", "engine": "vllm", "precision": "fp8", "mode": "aggregated",
           "workload": "smoke-1k-128", "runner": "h200-dgx", "launcher": "docker",
           "concurrency": [1], "gpus": 8, "nodes": 1, "fingerprint": "0" * 16,
           "timeout_minutes": 31, "measurement": {"kind": "levels", "concurrency": [1]},
           "evals": []}
    path = tmp_path / "job.json"
    path.write_text(json.dumps([job]))
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if not ln.startswith(("== ", "job "))]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _all_files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.mark.parametrize("job_id", [i for i in UNSAFE_IDS if i])
def test_job_file_with_unsafe_id(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 job_id: str) -> None:
    job_file = _job(tmp_path, job_id)
    out = tmp_path / "a" / "b" / "results"
    before = _all_files(tmp_path)
    rc = main(["run", str(job_file), "--output-dir", str(out), "--run-id", "r1",
               "--engine", "sim"])
    assert rc == 2
    assert "job id" in _one_line_error(capsys)
    assert _all_files(tmp_path) == before  # nothing written, inside or outside
    assert not Path("PWNED").exists()


@pytest.mark.parametrize(("command", "run_id"), [
    *[("run", i) for i in UNSAFE_IDS[:-1]],
    *[("sweep", i) for i in ("../../escape", "s3\ntouch PWNED;#", "-rf")]])
def test_unsafe_run_id(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
                       run_id: str) -> None:
    out = tmp_path / "a" / "b" / "results"
    job = (["--recipe", RECIPE, "--workload", "smoke-1k-128", "--runner-label", "h200-dgx",
            "--concurrency", "1"] if command == "run" else ["smoke"])
    rc = main([command, *job, "--output-dir", str(out), f"--run-id={run_id}", "--virtual"])
    assert rc == 2
    assert "--run-id" in _one_line_error(capsys)
    assert _all_files(tmp_path) == set()
    assert not Path("PWNED").exists()


def test_job_id_checked_where_the_folder_is_made(tmp_path: Path) -> None:
    """Below the CLI too: the job folder is never built from an unsafe id."""
    from infermatrix.errors import UsageError
    from infermatrix.launch.job import start_manifest
    from infermatrix.plan.jobs import Job

    job = Job.model_validate({**json.loads(_job(tmp_path, "x").read_text())[0],
                              "id": "../../escape"})
    with pytest.raises(UsageError, match="job id"):
        start_manifest(job, tmp_path / "run", "r1", "local")
    with pytest.raises(UsageError, match="run id"):
        start_manifest(job.model_copy(update={"id": "ok"}), tmp_path / "run", "../r", "local")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", ["a;touch PWNED", "a b", "-x", "$(x)"])
def test_recipe_file_name_is_a_safe_id(catalog_copy: Path, capsys: pytest.CaptureFixture[str],
                                       name: str) -> None:
    """A recipe's id is its path: it names job folders and SLURM jobs."""
    src = catalog_copy / "benchmarks" / f"{RECIPE}.yaml"
    (src.parent / f"{name}.yaml").write_text(src.read_text())
    rc = main(["validate", "--root", str(catalog_copy)])
    line = _one_line_error(capsys)
    assert rc == 2 and line.startswith("benchmarks/") and "recipe id" in line, line


def test_published_files_are_world_readable(tmp_path: Path) -> None:
    """Dashboards, records and catalog.md are served: 0644, not mkstemp's 0600."""
    from infermatrix.jsonio import write_json_atomic, write_text_atomic

    old = os.umask(0o022)
    try:
        for path in (write_text_atomic(tmp_path / "index.html", "<html>"),
                     write_json_atomic(tmp_path / "frontiers.json", {}),
                     write_text_atomic(tmp_path / "records.csv", "a\n", fsync=True)):
            assert path.stat().st_mode & 0o777 == 0o644, path
    finally:
        os.umask(old)
