"""Prompt token accounting and generated text.

Without a tokenizer the project-wide fallback holds: one token = one whitespace-separated word,
so a client that counts words agrees with the server's usage. With a tokenizer directory (a
local tokenizer.json) prompts are counted with it. Generated tokens are always single words
(" the", " of", ...), one per token, whatever the tokenizer.
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

# Common English words that are one token in the usual BPE vocabularies.
OUTPUT_WORDS = (
    " the", " of", " and", " to", " a", " in", " is", " it", " that", " for", " on", " with",
    " as", " was", " at", " by", " be", " this", " from", " or", " are", " an", " not", " but",
    " have", " one", " all", " were", " can", " more", " when", " there", " which", " their",
    " will", " out", " up", " about", " so", " what", " time",
)


class TokenizerError(ValueError):
    pass


class PromptTokenizer:
    def __init__(self, tokenizer_dir: str | Path | None = None):
        self._tok: Any = None
        self.name = "words"
        if tokenizer_dir is not None:
            path = Path(tokenizer_dir)
            file = path / "tokenizer.json" if path.is_dir() else path
            if not file.is_file():
                raise TokenizerError(f"no tokenizer.json in {tokenizer_dir}")
            try:
                from tokenizers import Tokenizer
                self._tok = Tokenizer.from_file(str(file))
            except Exception as exc:  # the library raises bare Exceptions on bad files
                raise TokenizerError(f"cannot load {file}: {exc}") from None
            self.name = str(file)

    def tokens(self, text: str) -> Sequence[Hashable]:
        """The prompt's tokens: words, or token ids with a tokenizer."""
        if self._tok is None:
            return text.split()
        return self._tok.encode(text, add_special_tokens=False).ids

    def ids(self, text: str) -> list[int]:
        """Token ids for /tokenize (words map to a stable 31-bit hash)."""
        if self._tok is None:
            return [zlib.crc32(w.encode()) & 0x7FFFFFFF for w in text.split()]
        return list(self._tok.encode(text, add_special_tokens=False).ids)


def chat_text(messages: Any) -> str:
    """The text of a chat request: message contents concatenated (text parts of lists too)."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("'messages' must be a non-empty list")
    parts: list[str] = []
    for m in messages:
        if not isinstance(m, dict):
            raise ValueError("each message must be an object")
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        elif content is not None:
            raise ValueError("message content must be a string or a list of parts")
    return "\n".join(parts)


def output_text(start: int, n: int) -> str:
    """Generated tokens start .. start+n-1 as text: one word per token."""
    words = OUTPUT_WORDS
    return "".join(words[i % len(words)] for i in range(start, start + n))
