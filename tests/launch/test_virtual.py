"""`infermatrix run --virtual`: the same job in virtual time writes results in exactly the schema
of a run against the real-time simulated server, marked simulated, with numbers that agree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JOB = ["--recipe", "deepseek-r1-0528/h200-sglang-fp8", "--workload", "smoke-1k-128",
       "--runner-label", "h200-dgx", "--concurrency", "2", "8"]


def _run(out: Path, run_id: str, *extra: str) -> dict[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "run", *JOB, "--output-dir", str(out),
         "--run-id", run_id, "--root", str(REPO), *extra],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (job_dir,) = (out / run_id / "jobs").iterdir()
    manifest = json.loads((job_dir / "manifest.json").read_text())
    assert manifest["status"] == "ok", manifest
    return {c: json.loads((job_dir / f"conc-{c}.json").read_text()) for c in (2, 8)}


def test_virtual_results_have_the_real_schema_and_agree(tmp_path: Path) -> None:
    real = _run(tmp_path, "rt", "--engine", "sim")
    virtual = _run(tmp_path, "vt", "--virtual")
    for conc in (2, 8):
        r, v = real[conc], virtual[conc]
        # every key a real run writes is there (the virtual one adds its sim_preemptions), but
        # the wall-clock window: virtual time has none to integrate GPU power over
        wall = {"benchmark_start_time_unix", "benchmark_end_time_unix"}
        assert set(r) - {"notes"} - wall <= set(v), set(r) - set(v)
        assert not wall & set(v)
        # (nothing to drain or flush between virtual levels: each starts from an idle engine)
        assert set(r["infermatrix"]) - {"drain", "flush"} == set(v["infermatrix"])
        assert v["infermatrix"]["simulated"] is True and v["infermatrix"]["launcher"] == "virtual"
        assert v["infermatrix"]["concurrency"] == v["max_concurrency"] == conc
        assert v["completed"] == r["completed"] and v["failed"] == 0
        assert v["output_tokens_from_usage"] == v["completed"] and v["output_token_mismatch"] == 0
        # the same model in both: decode speed within 15 % (the real-time server adds event-loop
        # jitter; tests/sim/test_sim_agreement.py holds the tighter bound on a controlled load)
        assert abs(v["median_tpot_ms"] - r["median_tpot_ms"]) <= 0.15 * r["median_tpot_ms"]


def test_sweep_engine_sim_virtual_runs_the_whole_pipeline(tmp_path: Path) -> None:
    """The issue's spelling, `sweep --engine sim --virtual`: every smoke job in virtual time,
    then collect and report, with `--engine vllm` still filtering recipes."""
    proc = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "sweep", "smoke", "--engine", "sim", "--virtual",
         "--engine", "vllm", "--output-dir", str(tmp_path), "--run-id", "vs", "--root", str(REPO)],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = json.loads((tmp_path / "vs" / "run.json").read_text())
    assert run["engine"] == "virtual" and run["jobs"] and {j["status"] for j in run["jobs"]} == {"ok"}
    assert all(".h200-vllm-" in j["id"] for j in run["jobs"])
    records = [json.loads(line) for line in (tmp_path / "vs" / "records.jsonl").read_text().splitlines()]
    assert records and all(r["simulated"] and r["launcher"] == "virtual" for r in records)
    assert (tmp_path / "vs" / "index.html").is_file()
