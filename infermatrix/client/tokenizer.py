"""Tokenizers: a real one from ``tokenizer.json`` (the `tokenizers` library), or the project-wide
fallback where one whitespace-separated word is one token (docs/metrics.md).

The fallback is what the simulated engine counts (``len(text.split())``), so prompts and output
counts agree exactly between client and simulator without downloading anything.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from .chat_template import SPECIAL_NAMES, read_template
from .errors import ClientInputError
from .hub import cache_root, cached_file, is_hub_id, unreachable

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _build_words() -> tuple[str, ...]:
    # 70 syllables (consonant + vowel), words of two syllables: 4,900 fixed pseudo-words
    # (ba-ba, ba-be, ...). Deterministic, so prompts depend only on the seed.
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
    return tuple(a + b for a in syllables for b in syllables)


WORDS: tuple[str, ...] = _build_words()
WORDS_WARNING = (
    "token counts are words (--tokenizer words), not the model's tokens: prompt lengths and "
    "throughputs are not comparable with vLLM's or SGLang's"
)
_WORD_INDEX = {w: i for i, w in enumerate(WORDS)}


class Tokenizer(Protocol):
    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...

    def random_ids(self, rng: random.Random, n: int) -> list[int]: ...


class WordTokenizer:
    """One whitespace-separated word = one token. Unknown words encode to a stable id."""

    name = "words"
    chat_template: str | None = None

    def encode(self, text: str) -> list[int]:
        n = len(WORDS)
        return [_WORD_INDEX.get(w, zlib.crc32(w.encode()) % n) for w in text.split()]

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(WORDS[i % len(WORDS)] for i in ids)

    def count(self, text: str) -> int:
        return len(text.split())

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def random_ids(self, rng: random.Random, n: int) -> list[int]:
        hi = len(WORDS) - 1
        return [rng.randint(0, hi) for _ in range(n)]


class HFTokenizer:
    """Wraps a ``tokenizers.Tokenizer`` (loaded from tokenizer.json)."""

    def __init__(self, tok: object, name: str) -> None:
        self._tok = tok
        self.name = name
        self.chat_template: str | None = None  # Jinja2 text (chat_template.py)
        self.special_tokens: dict[str, str] = {}
        vocab = tok.get_vocab_size(with_added_tokens=True)  # type: ignore[attr-defined]
        special = set(tok.get_added_tokens_decoder())  # type: ignore[attr-defined]
        # Random prompt ids come from ordinary vocabulary only: never BOS/EOS/chat markers, nor
        # byte-level pieces of a multi-byte character (they decode to U+FFFD, which re-encodes
        # to several tokens and defeats the exact-length loop).
        ids = [i for i in range(vocab) if i not in special]
        texts = tok.decode_batch([[i] for i in ids])  # type: ignore[attr-defined]
        self._sample_ids = [i for i, t in zip(ids, texts, strict=True) if t and "\ufffd" not in t]
        if not self._sample_ids:
            raise ClientInputError(
                f"tokenizer {name!r} has no ordinary tokens to build prompts from"
            )

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]

    def decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=True)  # type: ignore[attr-defined]

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)  # type: ignore[attr-defined]
        return [len(e.ids) for e in encs]

    def random_ids(self, rng: random.Random, n: int) -> list[int]:
        pool = self._sample_ids
        return [pool[int(rng.random() * len(pool))] for _ in range(n)]


class _TransformersTokenizer(HFTokenizer):
    """Optional fallback for hub ids when `transformers` happens to be installed."""

    def __init__(self, auto: object, name: str) -> None:
        backend = getattr(auto, "backend_tokenizer", None)
        if backend is None:
            raise ClientInputError(f"tokenizer {name!r} has no fast (tokenizers) backend")
        super().__init__(backend, name)


def load_tokenizer(spec: str | None, trust_remote_code: bool = False) -> Tokenizer:
    """``None`` or "words" → word tokenizer; a directory holding tokenizer.json (and its
    tokenizer_config.json: the chat template), or that file itself, → `tokenizers`; anything
    else is treated as a hub id (needs `transformers` or a cache). ``trust_remote_code`` is
    passed to `transformers` (a hub tokenizer with its own code)."""
    if spec is None or spec == "words":
        return WordTokenizer()
    try:
        from tokenizers import Tokenizer as _Tok
    except ImportError as e:  # pragma: no cover - it is a hard dependency
        raise ClientInputError(f"cannot load tokenizer {spec!r}: {e}") from e
    path = Path(spec).expanduser()
    if path.exists():
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise ClientInputError(f"cannot load tokenizer {spec!r}: no tokenizer.json in it")
        try:
            tok = HFTokenizer(_Tok.from_file(str(file)), spec)
        except Exception as e:  # the Rust side raises plain Exception subclasses
            raise ClientInputError(f"cannot load tokenizer {spec!r}: {_one_line(e)}") from e
        tok.chat_template, tok.special_tokens = read_template(file.parent)
        return tok
    if not is_hub_id(spec):  # neither a path nor a hub id: do not wait on the network
        raise ClientInputError(
            f"cannot load tokenizer {spec!r}: no such file or directory, and not a hub id "
            "(name or org/name)"
        )
    cached = cached_file(spec)
    if cached is not None:  # the hub cache, as vLLM and SGLang would find it: no network
        tok = load_tokenizer(str(cached), trust_remote_code)
        tok.name = spec
        return tok
    why = unreachable()
    if why is not None:
        raise ClientInputError(
            f"cannot load tokenizer {spec!r}: no such file or directory, not in the hub cache "
            f"({cache_root()}), and the hub cannot be asked ({why})"
        )
    try:
        from transformers import AutoTokenizer  # type: ignore[import-not-found]
    except ImportError:
        AutoTokenizer = None  # noqa: N806
    try:
        if AutoTokenizer is not None:
            auto = AutoTokenizer.from_pretrained(spec, trust_remote_code=trust_remote_code)
            tok = _TransformersTokenizer(auto, spec)
            tok.chat_template = getattr(auto, "chat_template", None)
            tok.special_tokens = {
                n: v for n in SPECIAL_NAMES if isinstance(v := getattr(auto, n, None), str)
            }
            return tok
        return HFTokenizer(_Tok.from_pretrained(spec), spec)
    except ClientInputError:
        raise
    except Exception as e:
        raise ClientInputError(
            f"cannot load tokenizer {spec!r}: not a local directory and the hub lookup failed "
            f"({_one_line(e)})"
        ) from e


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else type(e).__name__
