"""Knobs that make the simulated engine slower or noisier on purpose, for experiments on the
regression gate (scripts/regression_experiment.py, docs/results.md): both off by default.

``INFERMATRIX_SIM_STEP_SCALE``: every engine step of matching recipes takes this many times as
long — ``1.111`` (all recipes) or ``GLOB=FACTOR[,GLOB=FACTOR…]`` (recipe ids; the first
matching glob wins). ``1 / 0.9``: a 10 % throughput slowdown.

``INFERMATRIX_SIM_NIGHT_NOISE``: ``SIGMA@SEED`` — each recipe's steps are scaled by a factor
``exp(N(0, SIGMA))`` drawn from ``SEED`` and the recipe id: a "night" on a machine that is a
little faster or slower than the night before (as real fleets are: clocks, thermals,
neighbours), the same for every level of the recipe that night.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import os
import random
from collections.abc import Mapping

from .errors import SimConfigError

SCALE_VAR = "INFERMATRIX_SIM_STEP_SCALE"
NOISE_VAR = "INFERMATRIX_SIM_NIGHT_NOISE"


def _number(text: str, var: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and low <= value <= high):
        raise SimConfigError(f"${var}: {text!r} is not a number from {low:g} to {high:g}")
    return value


def _scale(spec: str, recipe: str) -> float:
    for part in spec.split(","):
        glob, eq, factor = part.strip().rpartition("=")
        if not eq:
            return _number(factor, SCALE_VAR, 0.01, 100)
        if fnmatch.fnmatchcase(recipe, glob):
            return _number(factor, SCALE_VAR, 0.01, 100)
    return 1.0


def _noise(spec: str, recipe: str) -> float:
    sigma, at, seed = spec.partition("@")
    if not at or not seed.strip():
        raise SimConfigError(f"${NOISE_VAR}: {spec!r} is not SIGMA@SEED (e.g. 0.01@3)")
    spread = _number(sigma, NOISE_VAR, 0.0, 0.5)
    digest = hashlib.sha256(f"{seed.strip()}\0{recipe}".encode()).digest()
    return math.exp(random.Random(int.from_bytes(digest[:8], "big")).gauss(0.0, spread))


def step_scale(recipe: str, environ: Mapping[str, str] = os.environ) -> float:
    """How many times as long every engine step of ``recipe`` takes (1.0 with neither knob)."""
    scale = 1.0
    if environ.get(SCALE_VAR, "").strip():
        scale *= _scale(environ[SCALE_VAR], recipe)
    if environ.get(NOISE_VAR, "").strip():
        scale *= _noise(environ[NOISE_VAR], recipe)
    return scale
