"""``--use-chat-template``: a prompt as the model's chat template renders one user message.

The template is the Jinja2 text of the tokenizer's ``tokenizer_config.json`` (``chat_template``,
or a ``chat_template.jinja`` beside it), rendered the way Hugging Face tokenizers render it
(trim_blocks, lstrip_blocks, a sandbox, ``raise_exception``) with the generation prompt added.
``--dsv4`` uses DeepSeek-V4's own encoding instead (its tokenizer ships no Jinja template):
BOS, the user marker, the text, the assistant marker and the thinking-start token.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import ClientInputError
from .files import read_json, read_text

DSV4_BOS = "<｜begin▁of▁sentence｜>"
DSV4_USER = "<｜User｜>"
DSV4_ASSISTANT = "<｜Assistant｜>"
DSV4_THINK = "<think>"
SPECIAL_NAMES = ("bos_token", "eos_token", "unk_token", "pad_token")


def chat_prompt(tok: Any, content: str, dsv4: bool = False) -> str:
    """The text the server would see for one user message ``content``."""
    if dsv4:
        return f"{DSV4_BOS}{DSV4_USER}{content}{DSV4_ASSISTANT}{DSV4_THINK}"
    template = getattr(tok, "chat_template", None)
    if not template:
        raise ClientInputError(
            f"--use-chat-template: tokenizer {tok.name!r} has no chat template "
            "(chat_template in tokenizer_config.json, or chat_template.jinja)"
        )
    from jinja2 import TemplateError

    specials = getattr(tok, "special_tokens", {})
    try:
        return _compile(template).render(
            messages=[{"role": "user", "content": content}], add_generation_prompt=True, **specials
        )
    except TemplateError as e:
        raise ClientInputError(f"--use-chat-template: the chat template failed: {e}") from e


def read_template(directory: Path) -> tuple[str | None, dict[str, str]]:
    """(chat template, special token strings) of a tokenizer directory; (None, {}) when it
    has neither file."""
    config: dict[str, Any] = {}
    path = directory / "tokenizer_config.json"
    if path.is_file():
        config = read_json(path)
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: the default one
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    jinja = directory / "chat_template.jinja"
    if not template and jinja.is_file():
        template = read_text(jinja)
    specials = {}
    for name in SPECIAL_NAMES:
        value = config.get(name)
        if isinstance(value, dict):  # {"content": "<s>", ...}
            value = value.get("content")
        if isinstance(value, str):
            specials[name] = value
    return (template if isinstance(template, str) else None), specials


@lru_cache(maxsize=4)
def _compile(template: str) -> Any:
    try:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise ClientInputError(f"--use-chat-template needs jinja2: {e}") from e

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda v, indent=None: json.dumps(v, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    try:
        return env.from_string(template)
    except TemplateError as e:
        raise ClientInputError(
            f"--use-chat-template: the chat template does not parse ({e})"
        ) from e
