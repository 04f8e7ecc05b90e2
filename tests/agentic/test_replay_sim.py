"""Replaying the example trace set on the simulated engine: exact recorded output lengths,
and prefix reuse across turns visible in the server's cached tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentic_servers import SIM_SCALE

from infermatrix.client import BenchConfig
from infermatrix.client.affinity import X_SESSION_ID
from infermatrix.client.session_sources import MooncakeSource, SessionSource, TraceSource
from infermatrix.client.sessions import LevelPlan, run_level_sync, summarize
from infermatrix.client.tokenizer import WordTokenizer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agentic"


def replay(url: str, source: SessionSource):
    cfg = BenchConfig(backend="openai-chat", base_url=url, ignore_eos=True)
    plan = LevelPlan(
        agents=len(source), duration_s=60, mid_session=False, replay_once=True, time_scale=SIM_SCALE
    )
    return run_level_sync(cfg, source, plan, X_SESSION_ID)


@pytest.mark.parametrize("kind", ["trace", "mooncake"])
def test_example_set_replays_exactly(sim_server, kind: str) -> None:
    source = (
        TraceSource(EXAMPLES / "manifest.json")
        if kind == "trace"
        else MooncakeSource(EXAMPLES / "mooncake.jsonl", WordTokenizer(), block_size=16)
    )
    out = replay(sim_server.base_url, source)
    recorded = {
        (source.session(i).conversation_id, t): turn.output_tokens
        for i in range(len(source))
        for t, turn in enumerate(source.session(i).turns)
    }
    got = {(tr.conversation_id, tr.turn): tr.output_tokens for tr in out.turns}
    assert got == recorded  # every recorded turn ran once, with exactly its recorded length
    assert all(tr.error is None and tr.input_tokens == tr.input_tokens_server for tr in out.turns)
    later = [tr for tr in out.turns if tr.turn > 0]
    # the conversation so far is cached: at least the previous turn's full blocks are reused
    assert all(tr.cached_tokens and tr.cached_tokens >= tr.input_tokens // 2 for tr in later)
    assert summarize(out)["exact_output_len"] == len(recorded)
