"""Strings from files (recipe notes, result fields, run ids) as inert text in the markdown and
HTML we write: no markup, no math, no live link other than http(s) or a relative path.

A leaf module (standard library only) so the catalog page, `compare` and the report share one
rule.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# what makes markdown (GitHub's included: $ math, ~ strike-through, | table cells, < raw HTML,
# & entities) read a character as markup; a backslash makes any of them literal
_MARKDOWN = re.compile(r"([\\`*_\[\]<>|!~&$#])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def md_text(value: object) -> str:
    """``value`` as markdown that reads exactly as the text: one line, every markup
    character backslash-escaped (so ``<!--`` cannot hide the rest of the page and ``|`` cannot
    end a table cell)."""
    return _MARKDOWN.sub(r"\\\1", _CONTROL.sub(" ", str(value)))


def md_code(value: object) -> str:
    """``value`` as an inline code span (nothing inside one is markup) when it holds no
    backtick, '|' or control character; else as escaped text."""
    text = str(value)
    if _CONTROL.search(text) or "`" in text or "|" in text or not text:
        return md_text(text)
    return f"`{text}`"


def safe_href(url: str) -> str | None:
    """``url`` when a link to it is safe in a page we publish (http, https, or a relative
    path with no scheme); None for javascript:, data:, file: and anything else."""
    text = url.strip()
    if _CONTROL.search(text):
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme in ("http", "https") and parts.netloc:
        return text
    if not parts.scheme and not parts.netloc and not text.startswith("//"):
        return text
    return None
