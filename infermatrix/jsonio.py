"""Atomic JSON writes (a reader never sees half a file, even if the writer dies mid-way) and
bounded JSON reads of files someone else wrote (results, job files)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

# Published files (dashboards, records, catalog.md, results) are world-readable;
# mkstemp alone would leave them 0600.
PUBLISHED_MODE = 0o644


def write_text_atomic(path: Path, text: str, *, fsync: bool = False) -> Path:
    """Write ``text`` to ``path`` via a temp file and a rename: readers never see half of it.
    ``fsync``: on disk before the rename (a result that must survive a power cut)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, PUBLISHED_MODE)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: Path, data: Any, *, indent: int | None = 2) -> Path:
    """``indent=None``: one line, written by json's C encoder (with an indent, json encodes in
    Python, several times slower: for files rewritten often)."""
    return write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=False, default=str)
                             + "\n")


# Integers a result can hold: what SQLite stores (a larger count is a corrupt file anyway).
MAX_JSON_INT = 2**63 - 1


class JsonNumberError(ValueError):
    """A number no result can hold (an integer beyond 64 bits)."""


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19:  # checked before int(): 10**5000 would raise ValueError
        raise JsonNumberError(f"integer out of range ({text[:12]}... {len(text)} digits)")
    value = int(text)
    if abs(value) > MAX_JSON_INT:
        raise JsonNumberError(f"integer out of range ({text})")
    return value


def _finite_float(text: str) -> float | None:
    """A float beyond float range (1e999) is unknown: null, as a missing figure is."""
    value = float(text)
    return value if math.isfinite(value) else None


def loads_bounded(text: str | bytes) -> Any:
    """``json.loads`` for untrusted files: NaN, Infinity and out-of-range floats read as null,
    an integer beyond 64 bits raises JsonNumberError (a ValueError), so one bad number costs
    one file, never a crash further on (float(10**400) overflows, SQLite refuses it)."""
    return json.loads(text, parse_int=_bounded_int, parse_float=_finite_float,
                      parse_constant=lambda _name: None)
