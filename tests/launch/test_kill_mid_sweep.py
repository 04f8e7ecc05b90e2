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
    assert manifest["status"] == "failed"
    assert manifest["error"].startswith("simulated engine exited with code -9 during the c=8 level")
    assert "log tail" in manifest["error"]
    levels = {lv["concurrency"]: lv for lv in manifest["levels"]}
    assert levels[1]["status"] == "ok"
    assert levels[8]["status"] == "failed" and levels[8]["file"] == "conc-8.json"
    assert levels[16] == {"concurrency": 16, "status": "skipped", "file": None, "error": None}
    first = json.loads((job_dir / "conc-1.json").read_text())
    assert first["completed"] > 0 and first["infermatrix"]["status"] == "ok"
    assert manifest["finished_at"] is not None
    assert leftovers(str(fake_cluster.root)) == []
