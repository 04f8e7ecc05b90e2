"""The one placeholder syntax of the catalog and its parser: ``${NAME}`` (or ``$NAME``, as some
seeds write it), NAME in upper case. Bound at render or run time: MODEL, PORT, HOST, CONC,
NODE_i, a fleet's env facts, a recipe's ``params``. (A recipe family's ``${axis}`` references
are lower case and resolved when the family is loaded: not placeholders.)

The schema lists a recipe's names, the renderer substitutes them (``engines/flags.py``), the
simulator resolves the engine knobs it reads (``sim/engine_args.py``): all through this module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

NAME = r"[A-Z][A-Z0-9_]*"
PLACEHOLDER = re.compile(rf"\$\{{({NAME})\}}|\$({NAME})")
BRACED = re.compile(rf"(\${{{NAME}}})")  # the ${NAME} form alone, kept whole by re.split


def names_in(text: str) -> list[str]:
    """Every placeholder's name in ``text``, in order."""
    return [a or b for a, b in PLACEHOLDER.findall(text)]


def fill(text: str, value: Callable[[str], str]) -> str:
    """``text`` with each placeholder replaced by ``value(name)``."""
    return PLACEHOLDER.sub(lambda m: value(m.group(1) or m.group(2)), text)


def strings_in(value: Any) -> Iterator[str]:
    """Every string in a YAML-shaped value: scalars, mapping keys and values, list items."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)
