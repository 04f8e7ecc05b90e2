"""How a conversation is built turn by turn: salts, growth, mid-session start, full mode."""

from __future__ import annotations

import random

from infermatrix.client.conversation import Conversation
from infermatrix.client.session_sources import Session, Turn
from infermatrix.client.tokenizer import WordTokenizer
from infermatrix.client.usage_tap import UsageTap

SYSTEM = {"role": "system", "content": "you are an agent"}


def session(context: str = "delta") -> Session:
    turns = [
        Turn(3, 0.0, messages=[SYSTEM, {"role": "user", "content": "first task"}]),
        Turn(5, 0.0, messages=[{"role": "user", "content": "tool said ok"}]),
        Turn(2, 0.0, messages=[{"role": "user", "content": "done now"}]),
    ]
    return Session("c1", turns, context)


def test_delta_conversation_grows_with_real_answers() -> None:
    conv = Conversation(session(), WordTokenizer(), "LVL", None)
    first = conv.request(0)
    assert first[0]["content"] == "LVL you are an agent" and first[1]["content"] == "first task"
    conv.answer("the answer")
    second = conv.request(1)
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "the answer" and conv.tokens == 5 + 2 + 2 + 3
    assert conv.next_len(2) == conv.tokens + 2


def test_reused_session_gets_its_own_salt_after_the_system_prompt() -> None:
    msgs = Conversation(session(), WordTokenizer(), "LVL", "r1-9").request(0)
    assert msgs[0]["content"].startswith("LVL you")  # the system prompt stays shared
    assert msgs[1]["content"] == "r1-9 first task"


def test_mid_session_start_fills_earlier_turns() -> None:
    conv = Conversation(session(), WordTokenizer(), "LVL", None)
    conv.skip_to(2, random.Random(0))
    assert [m["role"] for m in conv.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert [len(m["content"].split()) for m in conv.messages if m["role"] == "assistant"] == [3, 5]


def test_full_mode_replays_each_request_verbatim() -> None:
    conv = Conversation(session("full"), WordTokenizer(), "LVL", None)
    conv.request(0)
    conv.answer("ignored in full mode")
    msgs = conv.request(1)
    assert msgs == [{"role": "user", "content": "LVL tool said ok"}] and conv.tokens == 4


def test_usage_tap_reads_cached_tokens_split_across_reads() -> None:
    tap = UsageTap(None)  # type: ignore[arg-type]
    event = (
        b'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,'
        b'"prompt_tokens_details":{"cached_tokens":7}}}\n\ndata: [DONE]\n\n'
    )
    for piece in (b'data: {"choices":[{"text":" a"}]}\n\n', event[:40], event[40:]):
        tap._tail.append(piece)
    assert tap.cached_tokens() == 7
    tap._tail.clear()
    tap._tail.append(b'data: {"choices":[],"usage":{"prompt_tokens":9}}\n\n')
    assert tap.cached_tokens() is None
