"""What `infermatrix capacity` prints per level (issue 31): each tier's verdict, and speed and
TTFT in real units when --time-scale runs the load faster."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from infermatrix.capacity.eta import levels_left
from infermatrix.capacity.tiers import SloTier, level_line

LINE = re.compile(r"^  agents=(\d+)\s+P25 speed (\S+) tok/s, P95 TTFT (\S+) ms, .*: (.+)$")


def test_level_line_unscales_and_judges() -> None:
    level = {"p25_output_speed": 100.0, "p95_ttft_ms": 200.0, "completed": 10, "failed": 0,
             "error_rate": 0.0, "cached_token_ratio": 0.5}
    tiers = [SloTier(name="SLO20", min_output_speed=20 * 5, max_ttft_s=10 / 5),
             SloTier(name="SLO60", min_output_speed=60 * 5, max_ttft_s=5 / 5)]
    assert level_line(8, level, tiers, 0.05, time_scale=5, note="3 s") == (
        "  agents=8     P25 speed 20 tok/s, P95 TTFT 1000 ms, 10 ok / 0 failed, cached 0.50 "
        "(3 s): SLO20 pass, SLO60 FAIL")


def test_cli_prints_verdicts_and_real_speeds(limit_server, tmp_path: Path) -> None:
    srv = limit_server(3)
    out = tmp_path / "cap.json"
    scale = 2.0
    r = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "capacity", "--base-url", srv.base_url, "--gpus", "2",
         "--tier", "T=40:1", "--tier", "LOOSE=1:60", "--synthetic", "turns=4",
         "--synthetic", "system_prompt_tokens=10", "--synthetic", "user_tokens=5",
         "--synthetic", "output_tokens=8", "--synthetic", "tool_delay_s=0",
         "--duration", "0.5", "--warmup", "0.1", "--max-concurrency", "8",
         "--time-scale", str(scale), "-o", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "INFERMATRIX_PROGRESS_INTERVAL": "0.2"})
    assert r.returncode == 0, r.stderr
    # progress lines between the levels: levels measured of those expected, with an ETA
    progress = [ln for ln in r.stderr.splitlines() if ln.startswith("capacity: ")]
    assert progress, r.stderr
    assert any(re.match(r"capacity: \d+/\d+ levels \(\d+%\), [\d:]+ elapsed, ETA [\d:]+", ln)
               for ln in progress), progress
    doc = json.loads(out.read_text())
    printed = {int(m.group(1)): m for m in map(LINE.match, r.stderr.splitlines()) if m}
    assert set(printed) == {lv["concurrency"] for lv in doc["levels"]}, r.stderr
    for lv in doc["levels"]:
        m = printed[lv["concurrency"]]
        verdicts = dict(v.rsplit(" ", 1) for v in m.group(4).split(", "))
        assert verdicts == {name: "pass" if t["passed"] else "FAIL"
                            for name, t in lv["tiers"].items()}
        # the document keeps the measured (wall-clock) figures; the log shows real ones
        assert m.group(2) == f"{lv['p25_output_speed'] / scale:.0f}"
        assert m.group(3) == f"{lv['p95_ttft_ms'] * scale:.0f}"
    t_verdicts = {m.group(4).split(", ")[0] for m in printed.values()}
    assert t_verdicts == {"T pass", "T FAIL"}, r.stderr  # the search crossed the limit


def test_levels_left_follows_the_bracket() -> None:
    tier = SloTier(name="T", min_output_speed=10, max_ttft_s=1)
    ok = {"p25_output_speed": 20.0, "p95_ttft_ms": 100.0, "completed": 5, "error_rate": 0.0}
    bad = {**ok, "p25_output_speed": 5.0}
    bounds = {"start": 1, "max_concurrency": 4096, "resolution": 1, "resolution_pct": 0.0}
    # passing 1, 2, 4, 8: one more doubling, then bisect [8, 16] to 1 agent (3 steps)
    assert levels_left({1: ok, 2: ok, 4: ok, 8: ok}, [tier], 0.05, **bounds) == 1 + 3
    # bracket [8, 16]: 3 bisections; [8, 9]: done
    assert levels_left({8: ok, 16: bad}, [tier], 0.05, **bounds) == 3
    assert levels_left({8: ok, 9: bad}, [tier], 0.05, **bounds) == 0
    # 5% resolution at 80 agents is 4: [80, 96] takes 2 steps
    assert levels_left({80: ok, 96: bad}, [tier], 0.05, **{**bounds, "resolution_pct": 5.0}) == 2
