"""Prompts with exact token lengths, reproducible datasets, arrival schedules."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest

from infermatrix.client import BenchConfig
from infermatrix.client.arrivals import gamma_deadlines
from infermatrix.client.datasets import build_requests
from infermatrix.client.errors import ClientInputError
from infermatrix.client.prompts import exact_prompt
from infermatrix.client.tokenizer import WORDS, HFTokenizer, WordTokenizer, load_tokenizer


def cfg(**kw: object) -> BenchConfig:
    return BenchConfig(**{"num_prompts": 20, "random_input_len": 50, "random_output_len": 10, **kw})


def test_word_tokenizer_is_the_shared_fallback() -> None:
    tok = load_tokenizer(None)
    assert isinstance(tok, WordTokenizer)
    text = tok.decode(tok.random_ids(random.Random(1), 37))
    assert len(text.split()) == 37 == tok.count(text)
    assert all(w in WORDS for w in text.split())
    assert len(set(WORDS)) == len(WORDS) == 4900


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000])
def test_exact_prompt_lengths_with_a_real_tokenizer(hf_tokenizer_dir: Path, n: int) -> None:
    tok = load_tokenizer(str(hf_tokenizer_dir))
    assert isinstance(tok, HFTokenizer)
    rng = random.Random(n)
    for _ in range(5):
        text, measured = exact_prompt(tok, rng, n)
        assert measured == n == len(tok.encode(text))


@pytest.mark.parametrize(
    ("backend", "style", "inputs", "outputs"),
    [
        ("sglang", None, (40, 50), (8, 10)),  # SGLang: [r*L, L]
        ("sglang-oai-chat", None, (40, 50), (8, 10)),
        ("vllm", "sglang", (40, 50), (8, 10)),  # InferenceX's fork, asked for by name
        ("vllm", None, (9, 90), (1, 18)),  # current vLLM: [floor(L(1-r)), ceil(L(1+r))]
        ("openai-chat", None, (9, 90), (1, 18)),
    ],
)
def test_random_lengths_follow_the_backends_tool(
    hf_tokenizer_dir: Path,
    backend: str,
    style: str | None,
    inputs: tuple[int, int],
    outputs: tuple[int, int],
) -> None:
    tok = load_tokenizer(str(hf_tokenizer_dir))
    c = cfg(random_range_ratio=0.8, num_prompts=50, backend=backend, range_ratio_style=style)
    assert (c.length_range(50), c.length_range(10)) == (inputs, outputs)
    specs = build_requests(c, tok)
    assert all(inputs[0] <= s.prompt_len <= inputs[1] for s in specs)
    assert all(outputs[0] <= s.output_len <= outputs[1] for s in specs)
    assert all(s.prompt_len == len(tok.encode(s.prompt)) for s in specs)
    assert len({s.prompt_len for s in specs}) > 3


def test_default_ratio_is_the_tools_default() -> None:
    specs = build_requests(cfg(), WordTokenizer())  # vLLM: r = 0 is exactly L
    assert {s.prompt_len for s in specs} == {50} and {s.output_len for s in specs} == {10}
    assert cfg(range_ratio_style="sglang", random_range_ratio=1).length_range(50) == (50, 50)
    assert cfg(backend="sglang").length_range(50) == (1, 50)  # SGLang: r = 0 is [1, L]


def test_vllm_ratio_must_stay_below_one() -> None:
    with pytest.raises(ValueError, match="must be < 1 with vLLM"):
        cfg(random_range_ratio=1.0)


def test_reproducible_and_independent_rngs() -> None:
    tok = WordTokenizer()
    a = build_requests(cfg(seed=3, random_range_ratio=0.5, request_rate=10), tok)
    b = build_requests(cfg(seed=3, random_range_ratio=0.5, request_rate=10), tok)
    c = build_requests(cfg(seed=3, random_range_ratio=0.5, request_rate=99, burstiness=0.3), tok)
    d = build_requests(cfg(seed=4, random_range_ratio=0.5, request_rate=10), tok)
    assert [(s.prompt, s.output_len, s.deadline) for s in a] == [
        (s.prompt, s.output_len, s.deadline) for s in b
    ]
    # another arrival process leaves prompts and lengths untouched
    assert [(s.prompt, s.output_len) for s in a] == [(s.prompt, s.output_len) for s in c]
    assert [s.deadline for s in a] != [s.deadline for s in c]
    assert [s.prompt for s in a] != [s.prompt for s in d]


def test_gamma_arrivals_mean_rate_and_burstiness() -> None:
    n, rate = 20000, 50.0
    for burst in (1.0, 0.25, 4.0):
        d = gamma_deadlines(n, rate, burst, random.Random(0))
        gaps = [b - a for a, b in zip(d, d[1:], strict=False)]
        assert statistics.fmean(gaps) == pytest.approx(1 / rate, rel=0.05)
        # coefficient of variation of a gamma(k) gap is 1/sqrt(k)
        cv = statistics.pstdev(gaps) / statistics.fmean(gaps)
        assert cv == pytest.approx(burst**-0.5, rel=0.1)
    assert gamma_deadlines(3, float("inf"), 1.0, random.Random(0)) == [0.0, 0.0, 0.0]


def test_shared_prefix_groups(hf_tokenizer_dir: Path) -> None:
    tok = load_tokenizer(str(hf_tokenizer_dir))
    specs = build_requests(
        cfg(
            dataset_name="shared-prefix",
            shared_prefix_groups=3,
            shared_prefix_len=30,
            shared_prefix_questions=4,
            random_input_len=10,
        ),
        tok,
    )
    assert len(specs) == 12
    ids = [tok.encode(s.prompt) for s in specs]
    for g in range(3):
        group = ids[g::3]
        assert all(x[:30] == group[0][:30] for x in group)  # same prefix tokens
        assert len({tuple(x) for x in group}) == 4  # different questions
    assert ids[0][:30] != ids[1][:30]
    assert all(s.prompt_len == 40 for s in specs)


def test_sharegpt(tmp_path: Path) -> None:
    data = [
        {
            "conversations": [
                {"from": "human", "value": "one two three four five"},
                {"from": "gpt", "value": "a b c d e f"},
            ]
        },
        {
            "conversations": [
                {"from": "human", "value": "too short"},
                {"from": "gpt", "value": "x y z w"},
            ]
        },
        {
            "conversations": [
                {"from": "gpt", "value": "starts with gpt"},
                {"from": "human", "value": "q"},
            ]
        },
        {
            "messages": [
                {"role": "user", "content": "six seven eight nine ten"},
                {"role": "assistant", "content": "g h i j"},
            ]
        },
        {"conversations": []},
    ]
    p = tmp_path / "sg.json"
    p.write_text(json.dumps(data))
    specs = build_requests(cfg(dataset_name="sharegpt", dataset_path=str(p)), WordTokenizer())
    assert sorted((s.prompt_len, s.output_len) for s in specs) == [(5, 4), (5, 6)]
    fixed = build_requests(
        cfg(dataset_name="sharegpt", dataset_path=str(p), sharegpt_output_len=77), WordTokenizer()
    )
    assert {s.output_len for s in fixed} == {77}



def test_sharegpt_keeps_the_pairs_the_backends_own_client_keeps(tmp_path: Path) -> None:
    """vllm bench serve drops pairs under 4 tokens, prompts over 1,024 and pairs over 2,048;
    SGLang's bench_serving only those under 2 tokens: one file, each client's own requests."""
    def pair(prompt: int, reply: int) -> dict[str, object]:
        return {"conversations": [{"from": "human", "value": " ".join(["p"] * prompt)},
                                  {"from": "gpt", "value": " ".join(["r"] * reply)}]}

    lengths = [(3, 10), (10, 3), (2, 2), (1, 5), (1100, 10), (1000, 1100), (1000, 1000), (8, 9)]
    p = tmp_path / "sg.json"
    p.write_text(json.dumps([pair(a, b) for a, b in lengths]))

    def kept(**kw: object) -> list[tuple[int, int]]:
        specs = build_requests(cfg(dataset_name="sharegpt", dataset_path=str(p), **kw),
                               WordTokenizer())
        return sorted((s.prompt_len, s.output_len) for s in specs)

    assert kept(backend="vllm") == [(8, 9), (1000, 1000)]
    assert kept(backend="openai-chat") == [(8, 9), (1000, 1000)]
    assert kept(backend="sglang") == sorted(x for x in lengths if min(x) >= 2)
    # a fixed output length replaces the reply's before the check (vLLM skips its minimum)
    assert kept(backend="vllm", sharegpt_output_len=2) == [(8, 2), (10, 2), (1000, 2), (1000, 2)]


def test_mooncake_trace(tmp_path: Path) -> None:
    rows = [
        {"timestamp": 1000, "input_length": 20, "output_length": 3, "hash_ids": [1, 2, 3]},
        {"timestamp": 1500, "input_length": 25, "output_length": 4, "hash_ids": [1, 2, 3, 4]},
        {"timestamp": 3000, "input_length": 8, "output_length": 5, "hash_ids": [9]},
    ]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    tok = WordTokenizer()
    specs = build_requests(
        cfg(dataset_name="trace", dataset_path=str(p), trace_block_size=8, trace_time_scale=0.5),
        tok,
    )
    assert [s.deadline for s in specs] == [0.0, 0.25, 1.0]
    assert [s.prompt_len for s in specs] == [20, 25, 8]
    assert [s.output_len for s in specs] == [3, 4, 5]
    w0, w1, w2 = (s.prompt.split() for s in specs)
    assert w0 == w1[:20]  # blocks 1,2 and the start of 3 are shared
    assert w2[:8] != w0[:8]


def test_trace_bad_row(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 4, "output_length": 2}\n{"timestamp": 1}\n')
    with pytest.raises(ClientInputError, match=r"t\.jsonl:2"):
        build_requests(cfg(dataset_name="trace", dataset_path=str(p)), WordTokenizer())
