"""The one placeholder syntax of the catalog and its parser: ``${NAME}`` (or ``$NAME``, as some
seeds write it), NAME in upper case. Bound at render or run time: MODEL, PORT, HOST, CONC,
NODE_i, a fleet's env facts, a recipe's ``params``. (A recipe family's ``${axis}`` references
are lower case and resolved when the family is loaded: not placeholders.)

The schema lists a recipe's names, the renderer substitutes them (``engines/flags.py``), the
simulator resolves the engine knobs it reads (``sim/config.py``): all through this module.
"""

from __future__ import annotations

import re
from collections.abc import Callable

NAME = r"[A-Z][A-Z0-9_]*"
PLACEHOLDER = re.compile(rf"\$\{{({NAME})\}}|\$({NAME})")
BRACED = re.compile(rf"(\${{{NAME}}})")  # the ${NAME} form alone, kept whole by re.split


def names_in(text: str) -> list[str]:
    """Every placeholder's name in ``text``, in order."""
    return [a or b for a, b in PLACEHOLDER.findall(text)]


def fill(text: str, value: Callable[[str], str]) -> str:
    """``text`` with each placeholder replaced by ``value(name)``."""
    return PLACEHOLDER.sub(lambda m: value(m.group(1) or m.group(2)), text)
