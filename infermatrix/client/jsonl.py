"""JSON Lines input (datasets, traces, session replays): rows with their line numbers, and one
clear error naming the file and line for anything unreadable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import ClientInputError


def read_jsonl(path: Path, limit: int | None = None) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line, at most ``limit`` of them."""
    rows: list[tuple[int, dict[str, Any]]] = []
    try:
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if limit is not None and len(rows) >= limit:
                    break
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ClientInputError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
                if not isinstance(row, dict):
                    raise ClientInputError(f"{path}:{lineno}: expected a JSON object")
                rows.append((lineno, row))
    except (OSError, UnicodeDecodeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise ClientInputError(f"cannot read {path}: {detail}") from e
    return rows
