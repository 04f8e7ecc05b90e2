"""Records to and from files: JSONL (one record per line), CSV (one flat row per record)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from ..errors import UsageError
from ..jsonio import loads_bounded, read_bounded, write_text_atomic
from .records import Record

MAX_JSONL_BYTES = 4 << 30  # a records file of years of nightly history is some hundred MB
NESTED = ("pools", "latency", "ci95")  # the non-scalar fields: CSV flattens them


def write_records_jsonl(records: Iterable[Record], path: Path) -> Path:
    return write_text_atomic(path, "".join(r.model_dump_json() + "\n" for r in records))


def read_records_jsonl(path: Path) -> list[Record]:
    """Records from a JSONL file; UsageError naming ``file:line`` for a bad line."""
    out = []
    try:
        lines = read_bounded(path, MAX_JSONL_BYTES).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read records ({getattr(exc, 'strerror', None) or exc})") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:  # bounded numbers, as collect reads level files
            out.append(Record.model_validate(loads_bounded(line)))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise UsageError(f"{path}:{lineno}: not a record: {where + ': ' if where else ''}"
                             f"{err['msg']}") from None
        except ValueError as exc:  # JSON, an integer beyond 64 bits
            raise UsageError(f"{path}:{lineno}: not a record: {exc}") from None
    return out


def write_records_csv(records: Iterable[Record], path: Path) -> Path:
    """Scalar fields as columns, ``pools`` and ``ci95`` as JSON, one column per latency
    statistic."""
    records = list(records)
    scalar = [f for f in Record.model_fields if f not in NESTED]
    latency = sorted({k for r in records for k in r.latency})
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*scalar, "pools", "ci95", *latency])
    for r in records:
        row = r.__dict__  # the scalar fields as they are (no model_dump: 100,000 rows a year)
        nested = [json.dumps([p.model_dump(mode="json") for p in r.pools], separators=(",", ":")),
                  json.dumps(r.ci95, separators=(",", ":"))]
        writer.writerow([_cell(row[f]) for f in scalar] + nested
                        + [_cell(r.latency.get(k)) for k in latency])
    return write_text_atomic(path, buf.getvalue())


def _cell(value: object) -> object:
    return "" if value is None else value
