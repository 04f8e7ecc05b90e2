"""Reading commands, exports and YAML blocks out of published seed text (shared by the golden
tests and the seed-enumeration test)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

# first words of a serving command in the seeds (server, router, orchestrator, container)
COMMAND_STARTS = (
    "vllm serve ", "python3 -m sglang.launch_server", "python -m sglang.launch_server",
    "python -m sglang_router.launch_router", "python3 -m sglang_router.launch_router",
    "trtllm-serve ", "docker run ",
)
YAML_MARKER = re.compile(r"^# -{4,} (\S+)")


def joined_lines(text: str) -> list[str]:
    """Physical lines with backslash continuations joined (one logical line each)."""
    out: list[str] = []
    cur = ""
    for line in text.splitlines():
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            cur += stripped[:-1].rstrip() + " "
            continue
        out.append((cur + stripped.strip()).strip() if cur else stripped)
        cur = ""
    if cur:
        out.append(cur.strip())
    return out


def commands(text: str) -> list[str]:
    """Every serving command in a document, continuations joined, whitespace normalised."""
    return [normalise(line) for line in joined_lines(text) if line.lstrip().startswith(COMMAND_STARTS)]


def normalise(command: str) -> str:
    return " ".join(command.split())


def export_pairs(text: str) -> list[tuple[str, str]]:
    """Every ``export K=V`` line, in order (a name may be exported with several values)."""
    pairs: list[tuple[str, str]] = []
    for line in joined_lines(text):
        line = line.strip()
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").partition("=")
            pairs.append((key, shlex.split(value)[0] if value else ""))
    return pairs


def exports(text: str) -> dict[str, str]:
    return dict(export_pairs(text))


def yaml_blocks(text: str) -> list[tuple[str, str]]:
    """``# ---- name.yaml ----`` sections: (file name, YAML text up to the next non-YAML line)."""
    blocks: list[tuple[str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = YAML_MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() and not YAML_MARKER.match(lines[i]) \
                and not lines[i].startswith("System"):
            body.append(lines[i])
            i += 1
        blocks.append((m.group(1), "\n".join(body) + "\n"))
    return blocks


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace the seed's own placeholders (``$MODEL``, ``<model-path>``, ``${P_IP[$i]}``),
    longest first, never inside a longer name."""
    for key in sorted(values, key=len, reverse=True):
        text = re.sub(re.escape(key) + r"(?![A-Za-z0-9_])", lambda _m, k=key: values[k], text)
    return text


def tokens(command: str, values: Mapping[str, str]) -> list[str]:
    return shlex.split(substitute(normalise(" ".join(joined_lines(command))), values))


def drop_flags(argv: list[str], flags: list[str]) -> list[str]:
    """argv without ``--flag value`` pairs (for seeds that say they omit them)."""
    out: list[str] = []
    skip = False
    for tok in argv:
        if skip:
            skip = False
            continue
        if tok in flags:
            skip = True
            continue
        out.append(tok)
    return out
