"""`infermatrix run --resume RUN_ID` on one job (virtual time, in-process): a job its runner left
mid-way keeps its finished levels byte-identical and measures only the rest; a finished job is
left alone; reusing a run id without --resume is refused."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from infermatrix.cli import main
from infermatrix.launch import pidfile

REPO = Path(__file__).resolve().parents[2]
JOB = ["--recipe", "deepseek-r1-0528/h200-sglang-fp8", "--workload", "smoke-1k-128",
       "--runner-label", "h200-dgx", "--concurrency", "1", "4", "16"]


@pytest.fixture(autouse=True)
def _keep_signal_handlers() -> Iterator[None]:
    """`infermatrix run` in-process installs its own SIGTERM/SIGHUP handlers."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def _run(out: Path, *extra: str) -> int:
    return main(["run", *JOB, "--virtual", "--output-dir", str(out), "--root", str(REPO), *extra])


def _gone_runner() -> dict[str, object]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return {**pidfile.me(), "pid": proc.pid, "start": 1}


def test_run_resume_measures_only_the_unfinished_levels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, "--run-id", "v1") == 0
    (job_dir,) = (tmp_path / "v1" / "jobs").iterdir()
    path = job_dir / "manifest.json"
    # make it what a kill -9 during level c=16 leaves: state running, c=16 never written
    manifest = json.loads(path.read_text())
    manifest.update(state="running", status="running", finished_at=None, owner=_gone_runner())
    manifest["levels"] = [lv for lv in manifest["levels"] if lv["concurrency"] != 16]
    path.write_text(json.dumps(manifest))
    (job_dir / "conc-16.json").unlink()
    kept = {c: (job_dir / f"conc-{c}.json").read_bytes() for c in (1, 4)}

    assert _run(tmp_path, "--run-id", "v1") == 2  # refused: the folder holds this job
    assert "--resume v1" in capsys.readouterr().err

    assert main(["run", "--resume", "v1", "--output-dir", str(tmp_path), "--root", str(REPO)]) == 0
    manifest = json.loads(path.read_text())
    assert manifest["state"] == "done" and manifest["status"] == "ok" and manifest["attempt"] == 2
    assert manifest["previous_attempts"][0]["state"] == "interrupted"
    assert sorted(lv["concurrency"] for lv in manifest["levels"]) == [1, 4, 16]
    assert {c: (job_dir / f"conc-{c}.json").read_bytes() for c in (1, 4)} == kept
    assert json.loads((job_dir / "conc-16.json").read_text())["infermatrix"]["status"] == "ok"

    # done now: a second resume (with the job named, as job.yml would) changes nothing
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in job_dir.iterdir()}
    assert _run(tmp_path, "--resume", "v1") == 0
    assert "done already" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in job_dir.iterdir()} == before


def test_a_level_file_written_before_the_kill_reached_the_manifest_is_kept(tmp_path: Path) -> None:
    """A level's file is written before its manifest entry: a kill -9 between the two leaves a
    complete, measured level that the manifest does not list. The resume keeps it as it is."""
    assert _run(tmp_path, "--run-id", "v1") == 0
    (job_dir,) = (tmp_path / "v1" / "jobs").iterdir()
    path = job_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.update(state="running", status="running", finished_at=None, owner=_gone_runner())
    manifest["levels"] = [lv for lv in manifest["levels"] if lv["concurrency"] == 1]  # c=4 unlisted
    path.write_text(json.dumps(manifest))
    (job_dir / "conc-16.json").unlink()
    kept = {c: (job_dir / f"conc-{c}.json").read_bytes() for c in (1, 4)}

    assert main(["run", "--resume", "v1", "--output-dir", str(tmp_path), "--root", str(REPO)]) == 0
    manifest = json.loads(path.read_text())
    assert manifest["state"] == "done" and manifest["status"] == "ok"
    assert sorted(lv["concurrency"] for lv in manifest["levels"]) == [1, 4, 16]
    assert {c: (job_dir / f"conc-{c}.json").read_bytes() for c in (1, 4)} == kept
    assert manifest["previous_attempts"][0]["levels"] == []  # nothing of c=4 counted as lost
