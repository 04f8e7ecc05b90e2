"""The client's input files (datasets, traces, session replays, tokenizer configs): a regular
file only — a FIFO would block the run before it starts, /dev/zero never end — read with a
size bound, JSON nested no deeper than the interpreter can parse; each problem is one
ClientInputError naming the file (and line). The client stands alone, so it keeps its own
copy of this rule rather than the package's (``infermatrix/jsonio.py``)."""

from __future__ import annotations

import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import ClientInputError

MAX_INPUT_BYTES = 4 << 30  # the ShareGPT dump is ~700 MB; Mooncake traces are smaller
MAX_LINE_CHARS = 64 << 20  # one JSONL row


def _open(path: Path) -> io.BufferedReader:
    """Opened without blocking, then refused unless it is a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ClientInputError(f"cannot read {path}: not a regular file")
    os.set_blocking(fd, True)
    return open(fd, "rb")  # noqa: SIM115 - the caller's `with` closes it


def read_text(path: Path, limit: int = MAX_INPUT_BYTES) -> str:
    try:
        with _open(path) as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise ClientInputError(f"cannot read {path}: larger than {limit >> 20} MiB")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise ClientInputError(f"cannot read {path}: {detail}") from e


def parse_json(text: str, where: str) -> Any:
    """``json.loads``; a syntax error or nesting too deep is one line naming ``where``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ClientInputError(f"{where}:{e.lineno}: not valid JSON ({e.msg})") from e
    except RecursionError:
        raise ClientInputError(f"{where}: not valid JSON (nested too deeply)") from None


def read_json(path: Path) -> Any:
    return parse_json(read_text(path), str(path))


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a text file, each line at most MAX_LINE_CHARS."""
    try:
        with _open(path) as raw, io.TextIOWrapper(raw, encoding="utf-8") as fh:
            for lineno, line in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS + 1), ""), 1):
                if len(line) > MAX_LINE_CHARS:
                    raise ClientInputError(f"{path}:{lineno}: a line longer than "
                                           f"{MAX_LINE_CHARS >> 20} MiB")
                yield lineno, line
    except (OSError, UnicodeDecodeError) as e:
        detail = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise ClientInputError(f"cannot read {path}: {detail}") from e
