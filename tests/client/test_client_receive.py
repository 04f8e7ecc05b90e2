"""The receive path stores stamped pieces and parses them later, in bulk: the stamps must still
be those of the reads (not of the parse), and every event must be accounted."""

from __future__ import annotations

import asyncio
from typing import Any

from infermatrix.client.runner import execute


def test_events_are_stamped_when_received_not_when_parsed(serve: Any, make_cfg: Any) -> None:
    # 6 tokens 100 ms apart: the answer is parsed at its end, but the first event's stamp must
    # come before the last event was even sent (on any machine, however slow).
    srv = serve(ttft=0.05, tpot=0.1)
    out = asyncio.run(execute(make_cfg(srv, num_prompts=2, random_output_len=6)))
    for rec in out.records:
        assert rec.ok, rec.error_detail
        truth = srv.truth[rec.response_id]
        assert len(rec.event_times) == len(truth.sends) == 6
        assert all(r >= s for r, s in zip(rec.event_times, truth.sends, strict=True))
        assert rec.event_times[0] < truth.sends[-1]
        assert rec.event_times == sorted(rec.event_times)


def test_a_burst_of_events_is_accounted_in_full(serve: Any, make_cfg: Any) -> None:
    # With no TPOT the server writes all events back to back (reads then hold several).
    srv = serve()
    out = asyncio.run(execute(make_cfg(srv, num_prompts=2, random_output_len=50)))
    for rec in out.records:
        assert rec.ok and len(rec.event_times) == 50 and rec.usage_completion_tokens == 50
        assert rec.generated_text == "".join(f"w{i} " for i in range(50))


def test_a_long_answer_is_parsed_in_batches_while_it_streams(serve: Any, make_cfg: Any) -> None:
    # ~2000 events of ~100 bytes: well past the 64 KiB drain threshold.
    srv = serve(tpot=0.0005)
    out = asyncio.run(execute(make_cfg(srv, num_prompts=2, random_output_len=2000)))
    for rec in out.records:
        assert rec.ok, rec.error_detail
        assert len(rec.event_times) == 2000 and rec.usage_completion_tokens == 2000
        assert rec.generated_text == "".join(f"w{i} " for i in range(2000))
        truth = srv.truth[rec.response_id]
        assert all(r >= s for r, s in zip(rec.event_times, truth.sends, strict=True))


def test_a_malformed_event_late_in_a_long_answer_fails_it(serve: Any, make_cfg: Any) -> None:
    srv = serve(tpot=0.0005, malformed_after=1500)
    out = asyncio.run(execute(make_cfg(srv, num_prompts=2, random_output_len=2000)))
    assert [r.error for r in out.records] == ["bad_event"] * 2
