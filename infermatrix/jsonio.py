"""Atomic JSON writes (a reader never sees half a file, even if the writer dies mid-way) and
bounded reads of files someone else wrote (results, job files, catalogs, histories): a regular
file only (a FIFO would block, /dev/zero never end), at most a size bound, JSON depth bounded."""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

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
    one file, never a crash further on (float(10**400) overflows, SQLite refuses it); nesting
    deeper than the interpreter's recursion limit is a ValueError too, never a RecursionError."""
    try:
        return json.loads(text, parse_int=_bounded_int, parse_float=_finite_float,
                          parse_constant=lambda _name: None)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


# What a file we read may weigh unless its reader says otherwise (results, job files, plans).
MAX_READ_BYTES = 256 << 20


def open_regular(path: Path | str) -> IO[bytes]:
    """``path`` opened for reading when it is a regular file; OSError otherwise. Opened
    non-blocking first, so a FIFO (or a device) is refused instead of waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Path | str, limit: int = MAX_READ_BYTES) -> bytes:
    """A regular file's bytes, at most ``limit`` of them (OSError EFBIG beyond)."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"file is larger than {limit >> 20} MiB", str(path))
    return data


def read_json_bounded(path: Path | str, limit: int = MAX_READ_BYTES) -> Any:
    """A JSON file read through read_bounded and loads_bounded (OSError or ValueError)."""
    return loads_bounded(read_bounded(path, limit))
