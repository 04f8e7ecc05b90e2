"""Malformed and hostile streams, over real HTTP on loopback: a malformed event fails its
request with the reason, and an endless line or response cannot exhaust memory (a usage count
beyond float range: test_client_usage_bounds.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infermatrix.client import request, run_benchmark_sync
from infermatrix.client.runner import execute

N = 4


def records(serve: Any, make_cfg: Any, **behaviour: Any) -> list[Any]:
    srv = serve(**behaviour)
    return asyncio.run(execute(make_cfg(srv))).records


@pytest.mark.parametrize(
    ("fault", "why"),
    [({"malformed_after": 2}, "invalid JSON"), ({"bad_utf8_after": 3}, "invalid UTF-8")],
)
def test_a_malformed_event_fails_the_request_with_its_reason(
    serve: Any, make_cfg: Any, fault: dict[str, int], why: str
) -> None:
    recs = records(serve, make_cfg, **fault)
    assert [r.error for r in recs] == ["bad_event"] * N
    assert all(why in r.error_detail and r.bad_events == 1 for r in recs), recs[0].error_detail


def test_bad_events_are_counted_in_the_result(serve: Any, make_cfg: Any) -> None:
    srv = serve(malformed_after=1)
    r = run_benchmark_sync(make_cfg(srv))
    assert r["bad_events"] == N and r["failed"] == N and r["completed"] == 0
    clean = run_benchmark_sync(make_cfg(serve()))
    assert clean["bad_events"] == 0 and clean["completed"] == N


def test_a_response_beyond_the_limit_fails_the_request(
    serve: Any, make_cfg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(request, "RESPONSE_LIMIT", 1 << 20)
    srv = serve(endless_events=True)
    cfg = make_cfg(srv, num_prompts=2, timeouts={"connect": 10, "idle": 60, "total": 120})
    recs = asyncio.run(execute(cfg)).records
    assert [r.error for r in recs] == ["response_too_large"] * 2, recs[0].error_detail


# The client in its own process, so its peak memory can be read.
CLIENT = """
import resource, sys
from infermatrix.client.cli import main
code = main(sys.argv[1:])
print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def test_an_endless_line_is_cut_off_and_memory_stays_bounded(serve: Any, tmp_path: Path) -> None:
    srv = serve(endless_line=True)
    argv = ["--base-url", srv.base_url, "--model", "fake-model", "--num-prompts", "1"]
    argv += ["--random-input-len", "8", "--random-output-len", "4", "--disable-tqdm"]
    argv += ["--result-dir", str(tmp_path), "--result-filename", "r.json", "--tokenizer", "words"]
    argv += ["--request-timeout", "300", "--idle-timeout", "120"]
    t = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-c", CLIENT, *argv], capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 1, p.stderr[-2000:]
    assert time.monotonic() - t < 300  # cut off by the line limit, not by a timeout
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["failed"] == 1 and "sse_event_too_large" in json.dumps(result)
    rss_mib = int(p.stderr.split("maxrss_kib")[-1].split()[0]) / 1024
    # bounded by a few copies of the 16 MiB event limit (the pending event, the pieces read since
    # the last parse, their join) over the ~50 MiB interpreter; without the limit the client grows
    # for the whole request timeout (426 MB after 60 s was measured before the limit existed)
    assert rss_mib < 512, f"client peak memory {rss_mib:.0f} MiB"
