"""Turning knob maps into command-line tokens: the one place flag syntax lives.

Engines differ only in conventions (a ``FlagStyle``); the rules are shared:

* ``key: value``   -> ``--key value``; a key written ``key=`` renders ``--key=value``;
  a key that starts with ``-`` is used as written (``-c``, ``-t``).
* ``true``         -> ``--key`` alone; ``false`` and ``null`` -> nothing.
* a list           -> ``--key a b c`` (or, in "repeat" style, ``--key a --key b``).
* a mapping        -> one JSON argument (``--compilation-config '{"level": 3}'``).
* ``Repeat([...])``-> the flag once per item, each item a scalar or a list of tokens
  (``--prefill URL 8998 --prefill URL2 8999``).

Every value becomes exactly one argv element (or several, for lists) and is never parsed by
a shell here; ``shell_command`` quotes when a line of shell is needed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..catalog.placeholders import fill, names_in


class RenderError(ValueError):
    """A recipe that cannot be rendered: one line naming the recipe and what is wrong."""


@dataclass(frozen=True)
class Repeat:
    """A flag given several times, e.g. the router's ``--prefill URL PORT`` per instance."""

    items: tuple[Any, ...]


@dataclass(frozen=True)
class FlagStyle:
    prefix: str = "--"
    lists: Literal["spread", "repeat"] = "spread"


CLI = FlagStyle()
DOCKER = FlagStyle(lists="repeat")


def scalar_text(value: Any) -> str:
    """One value as the seeds write it: lower-case booleans, JSON for structures."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def flag_name(key: str, style: FlagStyle) -> tuple[str, bool]:
    """(flag as written on the command line, joined with '=')."""
    joined = key.endswith("=")
    key = key.removesuffix("=")
    return (key if key.startswith("-") else style.prefix + key), joined


def base_key(key: str) -> str:
    """The knob a flag key names, whatever its spelling: '--tp=' and 'tp' are both 'tp'."""
    return key.removesuffix("=").lstrip("-").replace("_", "-")


def render_flag(key: str, value: Any, style: FlagStyle = CLI) -> list[str]:
    if value is None or value is False:
        return []
    flag, joined = flag_name(key, style)
    if value is True:
        return [flag]
    if isinstance(value, Repeat):
        out: list[str] = []
        for item in value.items:
            out.extend(render_flag(key, item, style))
        return out
    if isinstance(value, list):
        if style.lists == "repeat" or joined:
            return [t for v in value for t in _pair(flag, scalar_text(v), joined)]
        return [flag, *(scalar_text(v) for v in value)]
    return _pair(flag, scalar_text(value), joined)


def _pair(flag: str, text: str, joined: bool) -> list[str]:
    return [f"{flag}={text}"] if joined else [flag, text]


def render_flags(items: Iterable[tuple[str, Any]], style: FlagStyle = CLI) -> list[str]:
    out: list[str] = []
    for key, value in items:
        out.extend(render_flag(key, value, style))
    return out


# --------------------------------------------------------------------------- placeholders


def substitute(value: Any, bindings: Mapping[str, str]) -> Any:
    """Replace bound ${NAME}/$NAME in strings (recursively); unbound names stay, as ${NAME}.

    A string that is exactly one bound placeholder keeps the binding's text; values are text
    on a command line anyway, and YAML config files get typed values via ``typed``.
    """
    if isinstance(value, str):
        return fill(value, lambda name: bindings.get(name, "${" + name + "}"))
    if isinstance(value, dict):
        return {substitute(k, bindings): substitute(v, bindings) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, bindings) for v in value]
    if isinstance(value, Repeat):
        return Repeat(tuple(substitute(v, bindings) for v in value.items))
    return value


def placeholders_in(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, str):
        found.update(names_in(value))
    elif isinstance(value, dict):
        for k, v in value.items():
            found |= placeholders_in(k) | placeholders_in(v)
    elif isinstance(value, list | tuple):
        for v in value:
            found |= placeholders_in(v)
    return found


def typed(value: Any) -> Any:
    """A config-file value after substitution: '8' -> 8, 'true' -> True, '0.9' -> 0.9,
    so ``tensor_parallel_size: ${TP}`` is an integer in the rendered YAML."""
    if isinstance(value, str):
        if value in ("true", "false"):
            return value == "true"
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
        return value
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return value


def substitute_config(value: Any, bindings: Mapping[str, str]) -> Any:
    """``substitute`` for config-file data: a string that was a placeholder and is now fully
    bound takes a YAML type; literal strings stay strings ("0.90" is not 0.9)."""
    if isinstance(value, str):
        out = substitute(value, bindings)
        return typed(out) if out != value and not placeholders_in(out) else out
    if isinstance(value, dict):
        return {substitute(k, bindings): substitute_config(v, bindings) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_config(v, bindings) for v in value]
    return value
