"""Failures are results (issue 30): a sweep with one job whose server cannot start names the
reason on the console, in summary.md, in the dashboard's failed list (headless Chromium) and as
"now failing" when compared with the night before.

The jobs run on "real" engines through the fake docker of tests/fakebin (the simulated engine
behind it, over loopback HTTP); a wrapper in front of it refuses the c=16 job's container the
way docker does when its daemon is down (exit code 125).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from browser_helpers import SET
from imx_support.headless import open_page

pytestmark = pytest.mark.slow

FAKEBIN = Path(__file__).resolve().parents[1] / "fakebin"
DAEMON_DOWN = ("docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
               "Is the docker daemon running?")
BROKEN_JOB = "smoke-1k-128.h200-dgx.c16"
RECIPE = "llama-3.1-70b-instruct/h200-vllm-fp8"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"  # kept out of git


def _wrapper(folder: Path) -> Path:
    """A `docker` that fails like a downed daemon for the broken job, else the fake docker."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "docker"
    script.write_text(f"""#!/bin/sh
case "$*" in
  *{BROKEN_JOB}*) echo "{DAEMON_DOWN}" >&2; echo >&2
                  echo "Run 'docker run --help' for more information" >&2; exit 125 ;;
esac
exec "{FAKEBIN}/docker" "$@"
""")
    script.chmod(0o755)
    return folder


def _sweep(root: Path, out: Path, run_id: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "sweep", "smoke", "--engine", "real",
         "--recipe", RECIPE, "--output-dir", str(out), "--run-id", run_id, "--root", str(root),
         "--ready-timeout", "120"],
        capture_output=True, text=True, timeout=600, check=False, cwd=out, env=env)


def _env(tmp_path: Path, root: Path, broken: bool) -> dict[str, str]:
    path = f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}"
    if broken:
        path = f"{_wrapper(tmp_path / 'broken-bin')}{os.pathsep}{path}"
    return {**os.environ, "PATH": path, "FAKEBIN_LOG": str(tmp_path / "calls.jsonl"),
            "FAKEBIN_STATE": str(tmp_path / "fake-state"), "FAKEBIN_PYTHON": sys.executable,
            "FAKEBIN_CATALOG_ROOT": str(root), "FAKEBIN_SIM_RECIPE": RECIPE,
            "FAKEBIN_NODE_PREFIX": "127.0.0."}


def test_a_job_whose_server_cannot_start_is_reported_everywhere(
        catalog_copy: Path, tmp_path: Path, chromium: str) -> None:
    out = tmp_path / "results"
    out.mkdir()
    night1 = _sweep(catalog_copy, out, "20261126T010000Z-night1", _env(tmp_path, catalog_copy, False))
    assert night1.returncode == 0, night1.stderr[-3000:]
    night2 = _sweep(catalog_copy, out, "20261127T010000Z-night2", _env(tmp_path, catalog_copy, True))
    assert night2.returncode == 1, night2.stderr[-3000:]

    # the console names the reason on the job's line, not just "log tail:"
    assert f"failed: both-0 exited with code 125 before serving: {DAEMON_DOWN}" in night2.stderr
    run_dir = out / "20261127T010000Z-night2"
    (job_dir,) = run_dir.glob(f"jobs/*{BROKEN_JOB}*")
    record = json.loads((job_dir / "failure.json").read_text())
    assert record["stage"] == "readiness" and record["runner"] == "h200-dgx"
    assert record["recipe"] == RECIPE and record["simulated"] is False
    assert DAEMON_DOWN in record["reason"] and "docker run --help" in record["log_tail"]
    assert record["fingerprint"] and record["job_id"] == job_dir.name

    summary = (run_dir / "summary.md").read_text()
    assert "1 failed jobs" in summary and "### Failed jobs (1)" in summary
    assert DAEMON_DOWN in summary

    # collect keeps it in the history store and counts it
    store = tmp_path / "history.sqlite"
    for night in sorted(out.iterdir()):
        done = subprocess.run([sys.executable, "-m", "infermatrix.cli", "collect", str(night),
                               "--store", str(store)], capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    assert "0 failed levels, 1 failed jobs" in done.stdout

    # compare: the level that measured fine last night is now failing, and why
    compared = subprocess.run([sys.executable, "-m", "infermatrix.cli", "compare",
                               str(out / "20261126T010000Z-night1"), str(run_dir),
                               "--fail-on-regression", "50"],
                              capture_output=True, text=True, timeout=120, check=False)
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "**1 now failing**" in compared.stdout
    now_failing = [ln for ln in compared.stdout.splitlines() if ln.startswith("| **now failing**")]
    assert len(now_failing) == 1 and "| 16 |" in now_failing[0]
    assert DAEMON_DOWN in compared.stdout
    # ... and the same from the history store (latest run against the one before)
    stored = subprocess.run([sys.executable, "-m", "infermatrix.cli", "compare", str(store),
                             str(store), "--new-run", run_dir.name],
                            capture_output=True, text=True, timeout=120, check=False)
    assert "**1 now failing**" in stored.stdout, stored.stdout + stored.stderr

    async def scenario() -> None:
        async with open_page(chromium) as page:
            await page.goto((run_dir / "index.html").as_uri())
            await page.wait_for("document.getElementById('failed-list').rows.length > 1")
            rows = await page.eval("[...document.querySelectorAll('#failed-list tbody tr')]"
                                   ".map(tr => tr.textContent)")
            assert len(rows) == 1 and DAEMON_DOWN in rows[0] and "readiness" in rows[0]
            ARTIFACTS.mkdir(exist_ok=True)
            await page.eval("document.querySelector('#failed details').open = true")
            await page.screenshot(ARTIFACTS / "failed-list.png")
            assert await page.eval("document.getElementById('ff-count').textContent") \
                == "1 of 1 failed jobs"
            # the filters narrow the list: another stage shows nothing, its own shows it again
            await page.eval(SET.format(id="ff-stage", value="readiness"))
            assert await page.eval("document.querySelectorAll('#failed-list tbody tr').length") == 1
            await page.eval("(() => { const i = document.getElementById('ff-text'); "
                            "i.value = 'no such reason'; i.dispatchEvent(new Event('input')); })()")
            assert await page.eval("document.querySelectorAll('#failed-list tbody tr').length") == 0
            assert page.errors == []

    asyncio.run(scenario())
