"""Session sources: distributions, the synthetic generator, trace and Mooncake loading, and the
shipped example set (reproducible from its script)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from infermatrix.client.errors import ClientInputError
from infermatrix.client.session_sources import (
    Dist,
    MooncakeSource,
    SyntheticSource,
    TraceSource,
    parse_synthetic,
)
from infermatrix.client.tokenizer import WordTokenizer

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "agentic"


def test_distributions() -> None:
    rng = random.Random(1)
    assert Dist.parse("5").sample(rng) == 5
    u = [Dist.parse("uniform:low=2,high=4").sample(rng) for _ in range(500)]
    assert min(u) >= 2 and max(u) <= 4
    ln = sorted(
        Dist.parse("lognormal:median=150,sigma=1.0,max=2000").sample(rng) for _ in range(4001)
    )
    assert 120 < ln[2000] < 185 and ln[-1] <= 2000
    z = [Dist.parse("zipf:a=1.5,high=50").sample_int(rng) for _ in range(2000)]
    assert min(z) >= 1 and max(z) <= 50 and z.count(1) > z.count(2) > z.count(5)
    with pytest.raises(ValueError):
        Dist.parse("lognormal:sigma=1")
    with pytest.raises(ClientInputError, match="turns"):
        parse_synthetic(["turns=uniform:low=5"])


def test_synthetic_sessions_share_a_system_prompt_and_are_reproducible() -> None:
    spec = parse_synthetic(
        [
            "turns=3",
            "system_prompt_tokens=uniform:low=50,high=80",
            "user_tokens=20",
            "output_tokens=7",
            "tool_delay_s=0.5",
            "sessions=4",
        ]
    )
    a, b = SyntheticSource(spec, WordTokenizer()), SyntheticSource(spec, WordTokenizer())
    s0, s1 = a.session(0), a.session(1)
    first0, first1 = s0.turns[0].content(), s1.turns[0].content()
    sys0, sys1 = first0[0]["content"].split(), first1[0]["content"].split()
    n = min(len(sys0), len(sys1))
    assert sys0[:n] == sys1[:n] and n >= 50  # one shared system prompt, per-session length
    assert len(first0[1]["content"].split()) == 20
    assert [t.output_tokens for t in s0.turns] == [7, 7, 7] and s0.turns[0].tool_delay_s == 0.5
    assert b.session(1).turns[2].content() == s1.turns[2].content()  # seeded, order-independent


def test_trace_errors_name_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(
        '{"conversation_id": "a", "messages": [{"role": "user", '
        '"content": "hi"}], "target_output_tokens": 3}\n{"conversation_id": "a"}\n'
    )
    (tmp_path / "m.json").write_text(json.dumps({"tasks": [{"file": "t.jsonl"}]}))
    with pytest.raises(ClientInputError, match=r"t.jsonl:2: bad turn"):
        TraceSource(tmp_path / "m.json")


def test_example_trace_set_loads() -> None:
    src = TraceSource(EXAMPLES / "manifest.json")
    assert len(src) == 4
    for i in range(len(src)):
        s = src.session(i)
        assert s.context == "delta" and s.turns[0].content()[0]["role"] == "system"
        assert all(t.output_tokens >= 1 and t.tool_delay_s > 0 for t in s.turns)


def test_mooncake_groups_rows_into_sessions() -> None:
    trace, mc = (
        TraceSource(EXAMPLES / "manifest.json"),
        MooncakeSource(EXAMPLES / "mooncake.jsonl", WordTokenizer(), block_size=16),
    )
    assert sorted(len(mc.session(i).turns) for i in range(len(mc))) == sorted(
        len(trace.session(i).turns) for i in range(len(trace))
    )
    s = mc.session(0)
    assert s.context == "full"
    first, second = (
        s.turns[0].content()[0]["content"].split(),
        s.turns[1].content()[0]["content"].split(),
    )
    assert second[: len(first) // 16 * 16] == first[: len(first) // 16 * 16]  # shared full blocks
    other = mc.session(1).turns[0].content()[0]["content"].split()
    assert (
        other[: 16 * 12] == first[: 16 * 12]
    )  # the system prompt's blocks are shared across sessions


def test_example_set_is_reproducible(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_agentic_examples.py"),
            "--out",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
    )
    for rel in (
        "manifest.json",
        "mooncake.jsonl",
        *(f"tasks/example-00{i}.jsonl" for i in range(4)),
    ):
        assert (tmp_path / rel).read_bytes() == (EXAMPLES / rel).read_bytes(), rel
