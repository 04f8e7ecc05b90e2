"""The server dies in the middle of a sweep: the job fails with a clear reason, keeps the level
already measured and its manifest, marks the rest skipped, and leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

from launch_helpers import FakeCluster, leftovers, run

RECIPE = "deepseek-r1-0528/h200-sglang-fp8"


def _kill_server_after_first_level(cluster: FakeCluster, run_id: str, done: threading.Event) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not done.is_set():
        if list((cluster.out / run_id / "jobs").glob("*/conc-1.json")):
            time.sleep(0.5)  # well into the second level
            for line in leftovers(str(cluster.root)):
                if "infermatrix.sim" in line:
                    os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
            return
        time.sleep(0.05)


def test_killed_server_fails_the_job_and_keeps_measured_levels(fake_cluster: FakeCluster) -> None:
    done = threading.Event()
    killer = threading.Thread(target=_kill_server_after_first_level,
                              args=(fake_cluster, "k1", done), daemon=True)
    killer.start()
    try:
        rc = run(fake_cluster.root, fake_cluster.out, "k1", RECIPE, "h200-dgx", [1, 8, 16],
                 "--engine", "sim")
    finally:
        done.set()
        killer.join()
    job_dir, manifest = fake_cluster.manifest("k1")
    assert rc == 1
    assert manifest["status"] == "failed" and manifest["error"]
    assert manifest["finished_at"] is not None
    levels = {lv["concurrency"]: lv for lv in manifest["levels"]}
    # the level measured before the kill is kept, with its data
    assert levels[1]["status"] == "ok"
    first = json.loads((job_dir / "conc-1.json").read_text())
    assert first["completed"] > 0 and first["infermatrix"]["status"] == "ok"
    # where the kill lands depends on the machine's speed: inside the c=8 level (the level is
    # recorded failed, with its file and the server's exit), or, on a loaded machine, before
    # that level's first request (the level never starts and is skipped). Either way nothing
    # after the kill counts as measured, and the job says why it stopped.
    if levels[8]["status"] == "failed":
        assert levels[8]["file"] == "conc-8.json" and (job_dir / "conc-8.json").is_file()
        assert "exited with code -9 during the c=8 level" in manifest["error"]
        assert "log tail" in manifest["error"]
    else:
        assert levels[8] == {"concurrency": 8, "status": "skipped", "file": None, "error": None}
    assert levels[16] == {"concurrency": 16, "status": "skipped", "file": None, "error": None}
    assert leftovers(str(fake_cluster.root)) == []
