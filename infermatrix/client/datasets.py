"""Workloads → list of RequestSpec, built entirely before the clock starts.

Each dataset draws lengths and content from separate seeded RNGs (and arrivals from a third one,
in arrivals.py), so changing one knob does not reshuffle the others and a run is reproducible."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from .arrivals import gamma_deadlines
from .chat_template import chat_prompt
from .config import SGLANG_BACKENDS, BenchConfig
from .errors import ClientInputError
from .files import read_json
from .jsonl import read_jsonl
from .prompts import exact_ids, exact_prompt
from .records import RequestSpec
from .tokenizer import Tokenizer


def rngs(seed: int) -> tuple[random.Random, random.Random, random.Random]:
    """(lengths, content, arrivals) RNGs; string seeds are hashed deterministically."""
    return (
        random.Random(f"{seed}:lengths"),
        random.Random(f"{seed}:content"),
        random.Random(f"{seed}:arrivals"),
    )


def build_requests(cfg: BenchConfig, tok: Tokenizer) -> list[RequestSpec]:
    lengths, content, arrivals = rngs(cfg.seed)
    name = cfg.dataset_name
    if name == "random":
        specs = random_dataset(cfg, tok, lengths, content)
    elif name == "sharegpt":
        specs = sharegpt_dataset(cfg, tok, content)
    elif name == "shared-prefix":
        specs = shared_prefix_dataset(cfg, tok, content)
    elif name == "trace":
        specs = trace_dataset(cfg, tok)  # the trace carries its own arrival times
        if cfg.use_chat_template:
            apply_template(cfg, tok, specs)
        return specs
    else:
        raise ClientInputError(  # multi-turn: run_benchmark runs closed-loop sessions instead
            f"--dataset-name {name} has no request list (closed-loop sessions: sessions.py)"
        )
    if cfg.use_chat_template:
        apply_template(cfg, tok, specs)
    for spec, d in zip(
        specs, gamma_deadlines(len(specs), cfg.request_rate, cfg.burstiness, arrivals), strict=True
    ):
        spec.deadline = d
    return specs


def draw_len(
    rng: random.Random, target: int, ratio: float, bounds: tuple[int, int] | None = None
) -> int:
    """Uniform in ``bounds``, by default [ratio·L, L] (SGLang's and InferenceX's), at least 1."""
    lo, hi = bounds or (int(target * ratio), target)
    return max(1, rng.randint(lo, hi))


def random_dataset(
    cfg: BenchConfig, tok: Tokenizer, lengths: random.Random, content: random.Random
) -> list[RequestSpec]:
    """Random token prompts. With the chat template, the template's own tokens count towards
    the input length (InferenceX's benchmark_serving.py): the random part is shortened by them
    and the recorded length is that of the templated text."""
    in_range = cfg.length_range(cfg.random_input_len)
    out_range = cfg.length_range(cfg.random_output_len)
    overhead = template_overhead(cfg, tok)
    specs = []
    for i in range(cfg.num_prompts):
        isl = draw_len(lengths, cfg.random_input_len, cfg.ratio, in_range)
        osl = draw_len(lengths, cfg.random_output_len, cfg.ratio, out_range)
        text, measured = exact_prompt(tok, content, max(1, isl - overhead))
        specs.append(RequestSpec(index=i, prompt=text, prompt_len=measured, output_len=osl))
    return specs


def template_overhead(cfg: BenchConfig, tok: Tokenizer) -> int:
    """Tokens the chat template adds around a one-token message (0 without the template)."""
    if not cfg.use_chat_template:
        return 0
    return tok.count(chat_prompt(tok, "a", cfg.dsv4)) - 1


def apply_template(cfg: BenchConfig, tok: Tokenizer, specs: list[RequestSpec]) -> None:
    """Each prompt becomes its templated text; its length is re-measured on that text."""
    texts = [chat_prompt(tok, s.prompt, cfg.dsv4) for s in specs]
    for spec, text, n in zip(specs, texts, tok.count_many(texts), strict=True):
        spec.prompt, spec.prompt_len = text, n


def shared_prefix_dataset(
    cfg: BenchConfig, tok: Tokenizer, content: random.Random
) -> list[RequestSpec]:
    """``shared_prefix_groups`` groups; each has one prefix of ``shared_prefix_len`` tokens and
    ``shared_prefix_questions`` questions of ``random_input_len`` tokens. Requests are interleaved
    across groups (g0q0, g1q0, …) so a group's prefix is not trivially hot; ``num_prompts`` is
    ignored (groups × questions requests)."""
    specs = []
    prefixes = [
        tok.encode(exact_prompt(tok, content, cfg.shared_prefix_len)[0])
        for _ in range(cfg.shared_prefix_groups)
    ]
    for _q in range(cfg.shared_prefix_questions):
        for prefix in prefixes:
            n = len(prefix) + cfg.random_input_len
            text, measured = exact_ids(tok, content, n, head=prefix)
            specs.append(
                RequestSpec(
                    index=len(specs),
                    prompt=text,
                    prompt_len=measured,
                    output_len=cfg.random_output_len,
                )
            )
    return specs


def sharegpt_dataset(cfg: BenchConfig, tok: Tokenizer, content: random.Random) -> list[RequestSpec]:
    """ShareGPT JSON: a list of {"conversations": [{"from": "human"|"gpt", "value": …}, …]}
    (also "role"/"content" turns). First human turn = prompt; the reply's token count = output
    length unless --sharegpt-output-len. Pairs are kept as the backend's own client keeps them
    (``sharegpt_keeps``)."""
    path = _path(cfg)
    data = read_json(path)  # a regular file, bounded in size and depth
    if not isinstance(data, list):
        raise ClientInputError(f"{path}: expected a JSON list of conversations")
    pairs = [p for p in (_first_pair(entry) for entry in data) if p is not None]
    content.shuffle(pairs)
    specs: list[RequestSpec] = []
    for prompt, reply in pairs:
        if len(specs) == cfg.num_prompts:
            break
        plen = tok.count(prompt)
        olen = cfg.sharegpt_output_len or tok.count(reply)
        if not sharegpt_keeps(plen, olen, sglang=cfg.backend in SGLANG_BACKENDS,
                              fixed_output=cfg.sharegpt_output_len is not None):
            continue
        specs.append(RequestSpec(index=len(specs), prompt=prompt, prompt_len=plen, output_len=olen))
    if not specs:
        raise ClientInputError(f"{path}: no usable conversations (need a human turn and a reply)")
    return specs


def sharegpt_keeps(prompt_len: int, output_len: int, *, sglang: bool, fixed_output: bool) -> bool:
    """Whether a ShareGPT pair is used. SGLang's bench_serving drops a pair with a prompt or
    output under 2 tokens; vLLM's bench serve one under 4 (the output unless
    --sharegpt-output-len fixes it), a prompt over 1,024 tokens, or the
    two together over 2,048. The same file so gives each client its own requests (the
    simulator's ``sim.published_requests.sharegpt_lengths`` restates the rule for published
    ShareGPT rows)."""
    if sglang:
        return prompt_len >= 2 and output_len >= 2
    return (prompt_len >= 4 and (fixed_output or output_len >= 4)
            and prompt_len <= 1024 and prompt_len + output_len <= 2048)


def _first_pair(entry: Any) -> tuple[str, str] | None:
    if not isinstance(entry, dict):
        return None
    turns = entry.get("conversations") or entry.get("conversation") or entry.get("messages")
    if not isinstance(turns, list) or len(turns) < 2:
        return None
    norm = []
    for t in turns[:2]:
        if not isinstance(t, dict):
            return None
        who = t.get("from", t.get("role"))
        text = t.get("value", t.get("content"))
        if not isinstance(text, str):
            return None
        norm.append((who, text))
    if norm[0][0] not in ("human", "user"):
        return None
    return norm[0][1], norm[1][1]


def trace_dataset(cfg: BenchConfig, tok: Tokenizer) -> list[RequestSpec]:
    """Mooncake-style JSONL: {"timestamp": ms, "input_length", "output_length", "hash_ids"}.

    Every hash id stands for one block of ``trace_block_size`` tokens whose content depends only
    on (seed, hash id), so requests sharing ids share a real token prefix. Arrivals follow the
    timestamps (relative to the first, × ``trace_time_scale``)."""
    path = _path(cfg)
    rows = read_jsonl(path, cfg.num_prompts)
    blocks: dict[int, list[int]] = {}
    bs = cfg.trace_block_size
    specs = []
    t_first = None
    for lineno, row in rows:
        try:
            ts = float(row.get("timestamp", 0.0))
            isl = int(row["input_length"])
            osl = int(row["output_length"])
            hash_ids = [int(h) for h in row.get("hash_ids", [])]
        except (KeyError, TypeError, ValueError) as e:
            raise ClientInputError(f"{path}:{lineno}: bad trace row ({e!r})") from e
        if isl < 1 or osl < 1:
            raise ClientInputError(f"{path}:{lineno}: input_length and output_length must be >= 1")
        ids: list[int] = []
        for h in hash_ids:
            if len(ids) >= isl:
                break
            if h not in blocks:
                blocks[h] = tok.random_ids(random.Random(f"{cfg.seed}:block:{h}"), bs)
            ids.extend(blocks[h])
        tail_rng = random.Random(f"{cfg.seed}:tail:{lineno}")
        text, measured = exact_ids(tok, tail_rng, isl, head=ids[:isl])
        t_first = ts if t_first is None else t_first
        specs.append(
            RequestSpec(
                index=len(specs),
                prompt=text,
                prompt_len=measured,
                output_len=osl,
                deadline=max(0.0, (ts - t_first) / 1000.0 * cfg.trace_time_scale),
            )
        )
    if not specs:
        raise ClientInputError(f"{path}: the trace has no requests")
    specs.sort(key=lambda s: s.deadline)
    return specs


def _path(cfg: BenchConfig) -> Path:
    if not cfg.dataset_path:
        raise ClientInputError(f"--dataset-name {cfg.dataset_name} needs --dataset-path")
    path = Path(cfg.dataset_path).expanduser()
    if not path.is_file():
        what = "not a regular file" if path.exists() else "no such file"
        raise ClientInputError(f"cannot read dataset {path}: {what}")
    return path
