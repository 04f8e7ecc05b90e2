"""Prompts with an exact token length: encode → adjust → decode → re-encode until stable.

Decoding random ids and re-encoding the text rarely gives back the same number of tokens
(merges across boundaries, normalisation), so we iterate a few rounds and record the length
actually measured on the final text."""

from __future__ import annotations

import random
from collections.abc import Sequence

from .tokenizer import Tokenizer

MAX_ROUNDS = 10


def exact_ids(
    tok: Tokenizer, rng: random.Random, n: int, head: Sequence[int] = ()
) -> tuple[str, int]:
    """Text of ``n`` tokens starting with ids ``head`` (kept as a prefix when it fits).

    Returns (text, measured length). The measured length equals ``n`` unless the tokenizer
    cannot reach it in MAX_ROUNDS (then it is the closest length found, still recorded)."""
    ids = list(head[:n]) + tok.random_ids(rng, max(0, n - len(head)))
    best_text, best_len = "", -1
    for _ in range(MAX_ROUNDS):
        text = tok.decode(ids)
        got = tok.encode(text)
        m = len(got)
        if m == n:
            return text, n
        if best_len < 0 or abs(m - n) < abs(best_len - n):
            best_text, best_len = text, m
        ids = got[:n] if m > n else got + tok.random_ids(rng, n - m)
    return best_text, best_len


def exact_prompt(tok: Tokenizer, rng: random.Random, n: int) -> tuple[str, int]:
    return exact_ids(tok, rng, n)
