"""argparse types for numeric flags: every number a person types is finite and within bounds
(`--max-shards 10**30` would plan for ever, `--ready-timeout nan` would never time out).

A leaf module (standard library only), shared by every command's parser.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def bounded_int(lo: int, hi: int) -> Callable[[str], int]:
    """An integer in [lo, hi]; the digits are counted before int() so 10**5000 costs nothing."""

    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if not digits.isdigit() or len(digits) > len(str(max(abs(lo), abs(hi)))):
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected a whole number from {lo} to {hi}")
        value = int(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value}: expected a whole number from {lo} to {hi}")
        return value

    return parse


def bounded_float(lo: float, hi: float, *, lo_open: bool = False) -> Callable[[str], float]:
    """A finite number in [lo, hi] (or (lo, hi] with ``lo_open``): nan and inf refused."""
    shape = f"a finite number {'above' if lo_open else 'from'} {lo:g} {'and at most' if lo_open else 'to'} {hi:g}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected {shape}") from None
        if not math.isfinite(value) or value < lo or value > hi or (lo_open and value == lo):
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected {shape}")
        return value

    return parse
