"""JSON Lines input (datasets, traces, session replays): rows with their line numbers, and one
clear error naming the file and line for anything unreadable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import ClientInputError
from .files import parse_json, read_lines


def read_jsonl(path: Path, limit: int | None = None) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line, at most ``limit`` of them."""
    rows: list[tuple[int, dict[str, Any]]] = []
    for lineno, line in read_lines(path):  # a regular file, bounded lines
        if limit is not None and len(rows) >= limit:
            break
        if not line.strip():
            continue
        row = parse_json(line, f"{path}:{lineno}")
        if not isinstance(row, dict):
            raise ClientInputError(f"{path}:{lineno}: expected a JSON object")
        rows.append((lineno, row))
    return rows
