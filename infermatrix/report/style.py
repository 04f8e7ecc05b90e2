"""One colour per hardware, one marker per engine, two themes: shared by plots and dashboard."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# Okabe-Ito-like hues, bright enough on a dark background and dark enough on a light one.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#9467BD",
           "#8C8C00", "#F0436A", "#17BECF"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
KNOWN_ENGINES = ["sglang", "vllm", "trtllm"]


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


def colours(hardware: Iterable[str]) -> dict[str, str]:
    return {hw: PALETTE[i % len(PALETTE)] for i, hw in enumerate(sorted(set(hardware)))}


def markers(engines: Iterable[str]) -> dict[str, str]:
    names = sorted(set(engines), key=lambda e: (KNOWN_ENGINES.index(e) if e in KNOWN_ENGINES else 99, e))
    return {e: MARKERS[i % len(MARKERS)] for i, e in enumerate(names)}
