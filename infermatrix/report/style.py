"""One colour per hardware, one marker per engine, a line style per parallelism, two themes:
shared by plots and dashboard.

Colours and markers are fixed per name (a table of the catalog's hardware and engines, then a
hash of the name), never by which names a page happens to hold: H200 has one colour on every
page, night after night. Within one hardware × engine, configurations (recipe × parallelism ×
aggregated/disaggregated) differ by line style; disaggregated ones are drawn hollow.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Okabe-Ito-like hues, bright enough on a dark background and dark enough on a light one.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#9467BD",
           "#8C8C00", "#F0436A", "#17BECF"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
KNOWN_ENGINES = ["sglang", "vllm", "trtllm"]
# matrix/hardware.yaml's systems, in palette order (colours are distinct for the first ten)
KNOWN_HARDWARE = ["H200", "B200", "H100", "MI355X", "B300", "MI300X", "GB200", "MI325X",
                  "GB300", "A100", "H800", "H20", "Ascend-910C", "CPU"]
# per-GPU metrics of a disaggregated deployment: which GPUs they divide by (records.derive)
PER_GPU = {"output_tput_per_gpu": "output tok/s per decode GPU",
           "input_tput_per_gpu": "input tok/s per prefill GPU",
           "total_tput_per_gpu": "total tok/s per GPU of both pools"}
# metrics that blow up at low load (cost, energy): a log axis when they span decades
LOG_METRICS = ("usd_per_m_output_tokens", "usd_per_m_total_tokens", "j_per_output_token",
               "j_per_token")
DECADE = 10.0
# line dashes, matplotlib (offset, on-off) and canvas setLineDash alike, in points
DASHES: list[list[float]] = [[], [6, 3], [2, 2], [8, 3, 2, 3], [12, 4], [4, 2, 1, 2, 1, 2]]


@dataclass(frozen=True)
class Theme:
    name: str
    background: str
    foreground: str
    grid: str
    muted: str


THEMES = {
    "light": Theme("light", "#ffffff", "#1b1f24", "#d8dee4", "#6e7781"),
    "dark": Theme("dark", "#0d1117", "#e6edf3", "#30363d", "#8b949e"),
}


def _slot(name: str, known: Sequence[str], size: int) -> int:
    """A name's fixed slot: its place in ``known`` (case-insensitive), else a hash of it."""
    folded = [k.lower() for k in known]
    if name.lower() in folded:
        return folded.index(name.lower()) % size
    return zlib.crc32(name.lower().encode()) % size


def colour(hardware: str) -> str:
    return PALETTE[_slot(hardware, KNOWN_HARDWARE, len(PALETTE))]


def marker(engine: str) -> str:
    return MARKERS[_slot(engine, KNOWN_ENGINES, len(MARKERS))]


def colours(hardware: Iterable[str]) -> dict[str, str]:
    return {hw: colour(hw) for hw in sorted(set(hardware))}


def markers(engines: Iterable[str]) -> dict[str, str]:
    names = sorted(set(engines), key=lambda e: (KNOWN_ENGINES.index(e) if e in KNOWN_ENGINES else 99, e))
    return {e: marker(e) for e in names}


def dashes(configurations: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]:
    """(hardware, engine, configuration) → a line style (index into ``DASHES``): configurations
    of one hardware × engine in sorted order, solid first."""
    out: dict[tuple[str, str, str], int] = {}
    seen: dict[tuple[str, str], int] = {}
    for hw, eng, conf in sorted(set(configurations)):
        n = seen.get((hw, eng), 0)
        seen[(hw, eng)] = n + 1
        out[(hw, eng, conf)] = n % len(DASHES)
    return out
