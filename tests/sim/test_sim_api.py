"""The OpenAI-compatible surface of the simulated engine, over real loopback HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_helpers import config, get_text, metric, post_json, run, session, stream

FAST = 20.0  # time scale for tests that check the API, not the timing


@pytest.fixture
def base(sim_server) -> str:
    return sim_server(config(tp=8), time_scale=FAST).base_url


def test_completion_usage_counts_words_and_exact_max_tokens(sim_server) -> None:
    base = sim_server(config(tp=8), time_scale=1.0).base_url  # real time: one event per step
    prompt = "one two three four five six seven"

    async def go():
        async with session() as s:
            streamed = await stream(s, base + "/v1/completions",
                                    {"prompt": prompt, "max_tokens": 37, "ignore_eos": True})
            status, whole = await post_json(s, base + "/v1/completions",
                                            {"model": "sim-model", "prompt": prompt, "max_tokens": 5})
            return streamed, status, whole

    streamed, status, whole = run(go())
    assert streamed.status == 200 and streamed.done and streamed.error is None
    assert streamed.words == 37 == streamed.usage["completion_tokens"]
    assert streamed.usage["prompt_tokens"] == 7
    assert streamed.usage["total_tokens"] == 44
    assert streamed.usage["prompt_tokens_details"] == {"cached_tokens": 0}
    # one event per token (per engine step) without speculative decoding; a loaded machine may
    # merge a few steps into one event, as real servers do when their output loop falls behind
    assert len(streamed.text_events) >= 30
    last = [e for _, e in streamed.events if isinstance(e, dict) and e["choices"]][-1]
    assert last["choices"][0]["finish_reason"] == "length"
    assert status == 200 and whole["object"] == "text_completion"
    assert len(whole["choices"][0]["text"].split()) == 5 == whole["usage"]["completion_tokens"]


def test_chat_stream_opens_with_a_role_only_chunk(base: str) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi there you"}]

    async def go():
        async with session() as s:
            return await stream(s, base + "/v1/chat/completions",
                                {"messages": messages, "max_tokens": 6, "min_tokens": 6})

    out = run(go())
    first = out.events[0][1]
    assert first["object"] == "chat.completion.chunk"
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert out.words == 6 == out.usage["completion_tokens"]
    assert out.usage["prompt_tokens"] == 5  # words of all message contents
    assert out.text_events[0] > out.events[0][0]  # the role chunk is not the first token


def test_no_usage_chunk_unless_asked(base: str) -> None:
    async def go():
        async with session() as s:
            return await stream(s, base + "/v1/completions",
                                {"prompt": "a b", "max_tokens": 3, "stream_options": None})

    out = run(go())
    assert out.done and out.usage is None and out.words == 3


def test_models_tokenize_health_metrics_and_cache_endpoints(base: str) -> None:
    async def go():
        async with session() as s:
            health = await get_text(s, base + "/health")
            async with s.get(base + "/v1/models") as r:
                models = await r.json()
            tok = await post_json(s, base + "/tokenize", {"prompt": "alpha beta gamma"})
            await stream(s, base + "/v1/completions", {"prompt": "x y z", "max_tokens": 4})
            metrics = await get_text(s, base + "/metrics")
            reset = await post_json(s, base + "/reset_prefix_cache")
            flush = await post_json(s, base + "/flush_cache")
            return health, models, tok, metrics, reset, flush

    health, models, tok, metrics, reset, flush = run(go())
    assert health[0] == 200
    assert models["data"][0]["id"] == "sim-model"
    assert tok[0] == 200 and tok[1]["count"] == 3 and len(tok[1]["tokens"]) == 3
    status, text = metrics
    assert status == 200
    assert metric(text, "vllm:generation_tokens_total") == 4
    assert metric(text, "vllm:prompt_tokens_total") == 3
    assert metric(text, "vllm:request_success_total") == 1
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "sim:prefix_cache_hit_rate", "vllm:num_preemptions_total"):
        metric(text, name)
    assert reset[0] == 200 and flush[0] == 200


def test_bad_requests_get_clear_errors(base: str) -> None:
    async def go():
        async with session() as s:
            wrong_model = await post_json(s, base + "/v1/completions", {"model": "other", "prompt": "a"})
            too_long = await post_json(s, base + "/v1/completions",
                                       {"model": "sim-model", "prompt": "a", "max_tokens": 10**7})
            bad_min = await post_json(s, base + "/v1/completions",
                                      {"model": "sim-model", "prompt": "a", "max_tokens": 2, "min_tokens": 5})
            async with s.post(base + "/v1/chat/completions", data=b"{nope") as r:
                bad_json = r.status
            return wrong_model, too_long, bad_min, bad_json

    wrong_model, too_long, bad_min, bad_json = run(go())
    assert wrong_model[0] == 404 and "does not exist" in wrong_model[1]["error"]["message"]
    assert too_long[0] == 400 and "maximum context length" in too_long[1]["error"]["message"]
    assert bad_min[0] == 400
    assert bad_json == 400


def test_tokenizer_counts_prompt_tokens(sim_server, tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    # a word-piece-free tokenizer that splits punctuation off words: 'a,b c' = 4 tokens
    vocab = {"[UNK]": 0, "a": 1, ",": 2, "b": 3, "c": 4}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    base = sim_server(config(tp=8), time_scale=FAST, tokenizer_dir=str(tmp_path)).base_url

    async def go():
        async with session() as s:
            return await stream(s, base + "/v1/completions", {"prompt": "a,b c", "max_tokens": 2})

    out = run(go())
    assert out.usage["prompt_tokens"] == 4  # the word fallback would say 2


def test_stream_interval_sends_the_first_token_then_chunks(sim_server) -> None:
    base = sim_server(config(tp=8, stream_interval=5), time_scale=1.0).base_url

    async def go():
        async with session() as s:
            return await stream(s, base + "/v1/completions", {"prompt": "a b", "max_tokens": 12})

    out = run(go())
    words = out.text_words
    assert out.usage["completion_tokens"] == 12 == sum(words)
    assert words[0] < 5  # the first token goes out at once (a loaded loop may merge a second)
    # Later events carry stream_interval tokens each; a server lagging behind its clock on a
    # loaded machine sends what is due at once, so an event may hold more, never fewer.
    assert all(w >= 5 for w in words[1:-1]) and len(words) <= 4
