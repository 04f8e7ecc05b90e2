"""The main job end to end: `infermatrix sweep` plans the smoke sweep, runs every job on the
simulated engine over real loopback HTTP, and writes raw JSON, records, a plot and a dashboard."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_smoke_sweep_writes_every_output(repo_root: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "sweep", "--output-dir", str(tmp_path),
         "--run-id", "e2e", "--root", str(repo_root)],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = tmp_path / "e2e"
    assert f"results: {run_dir}" in proc.stdout

    manifests = sorted(run_dir.glob("jobs/*/manifest.json"))
    assert len(manifests) == 4  # the vLLM recipe relaunches per level: 3 jobs + 1 SGLang job
    levels = 0
    for path in manifests:
        manifest = json.loads(path.read_text())
        assert manifest["status"] == "ok", manifest
        for level in manifest["levels"]:
            raw = json.loads((path.parent / level["file"]).read_text())
            block = raw["infermatrix"]
            assert block["concurrency"] == raw["max_concurrency"] == level["concurrency"]
            assert block["simulated"] is True and block["hardware"] == "H200"
            assert raw["completed"] >= 4 and raw["failed"] == 0
            # ignore_eos: every request generated its requested length, in [0.8 × 128, 128]
            assert 102 * raw["completed"] <= raw["total_output_tokens"] <= 128 * raw["completed"]
            assert raw["output_tokens_from_usage"] == raw["completed"]
            assert raw["median_ttft_ms"] > 0 and raw["median_tpot_ms"] > 0
            levels += 1
    assert levels == 6

    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    assert len(records) == 6
    png = run_dir / "pareto.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    html = (run_dir / "index.html").read_text()
    assert "<html" in html.lower() and "deepseek-r1-0528" in html

    # throughput rises with concurrency for the one-server SGLang job
    sglang = next(p for p in manifests if "sglang" in p.parent.name)
    tput = [json.loads((sglang.parent / f"conc-{c}.json").read_text())["output_throughput"]
            for c in (1, 4, 16)]
    assert tput[0] < tput[1] < tput[2]
