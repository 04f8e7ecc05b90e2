"""--num-workers: processes share one run against a common t0; results merge."""

from __future__ import annotations

import asyncio
from typing import Any

from infermatrix.client import BenchConfig
from infermatrix.client.records import RequestSpec
from infermatrix.client.runner import Prepared, execute
from infermatrix.client.workers import split


def test_split_deals_requests_and_concurrency() -> None:
    prepared = [Prepared(RequestSpec(i, "p", 1, 1), b"") for i in range(10)]
    shards = split(BenchConfig(num_workers=3, max_concurrency=8), prepared)
    assert [c for c, _ in shards] == [3, 3, 2]
    assert sorted(p.spec.index for _, s in shards for p in s) == list(range(10))
    assert len(split(BenchConfig(num_workers=4, max_concurrency=2), prepared)) == 2


def test_two_workers_merge_into_one_run(serve: Any, make_cfg: Any) -> None:
    srv = serve(ttft=0.05, tpot=0.01)
    out = asyncio.run(execute(make_cfg(srv, num_prompts=24, max_concurrency=6, num_workers=2)))
    recs = out.records
    assert [r.index for r in recs] == list(range(24))
    assert all(r.ok for r in recs)
    assert all(out.t0 <= r.start <= out.t_end for r in recs)
    assert all(r.start >= r.deadline for r in recs)  # never sent before its deadline
    # at most 6 in flight across both processes, and both processes did work
    edges = sorted([(r.start, 1) for r in recs] + [(r.end, -1) for r in recs])
    cur = peak = 0
    for _, d in edges:
        cur += d
        peak = max(peak, cur)
    assert peak <= 6
    assert len({r.response_id for r in recs}) == 24
    ttfts = sorted(r.event_times[0] - r.start for r in recs)
    assert 0.045 < ttfts[len(ttfts) // 2] < 1.0  # server TTFT 50 ms
