"""The catalog's typed schema: hardware, models, recipes, workloads, sweeps and fleets, one
module per kind of catalog file (``field_types.py`` holds the strict base and the bounds they
share). ``infermatrix.catalog.schema`` re-exports every name, the path code imports them by.

Every model forbids unknown keys, so a typo in a YAML file is an error, not a silent default.
Cross-file checks (references resolve, parallelism fits the hardware) live in validate.py.
"""

from __future__ import annotations

from ..placeholders import strings_in
from .family import FAMILY_REF, RecipeFamily, instantiate, unknown_axes
from .field_types import (
    MAX_CONCURRENCY,
    MAX_COUNT,
    MAX_FIGURE,
    MAX_GPUS,
    MAX_PER_CONCURRENCY,
    MAX_SECONDS,
    MAX_TOKENS,
    PRECISIONS,
    ArgValue,
    Degree,
    Dtype,
    EnvMap,
    Figure,
    Name,
    PositiveInt,
    Precision,
    Scalar,
    Strict,
    Tokens,
)
from .fleet import Fleet
from .hardware import Hardware, MixedPrecision, Model, routed_expert_params
from .recipe import (
    Container,
    Engine,
    KvTransfer,
    Parallel,
    Pool,
    Recipe,
    Router,
    Source,
    SpecDecode,
    Topology,
)
from .sweep import MAX_RESOLUTION_PCT, CapacitySearchSpec, Sweep, SweepEntry
from .workload import (
    AGENTIC_ONLY,
    FIXED_ONLY,
    AgenticSessions,
    DistName,
    DistValue,
    SloTierSpec,
    Workload,
)

__all__ = [
    "AGENTIC_ONLY", "FAMILY_REF", "FIXED_ONLY", "MAX_CONCURRENCY", "MAX_COUNT", "MAX_FIGURE",
    "MAX_GPUS", "MAX_PER_CONCURRENCY", "MAX_RESOLUTION_PCT", "MAX_SECONDS", "MAX_TOKENS",
    "PRECISIONS", "AgenticSessions", "ArgValue", "CapacitySearchSpec", "Container", "Degree",
    "DistName", "DistValue", "Dtype", "Engine", "EnvMap", "Figure", "Fleet", "Hardware",
    "KvTransfer", "MixedPrecision", "Model", "Name", "Parallel", "Pool", "PositiveInt", "Precision", "Recipe",
    "RecipeFamily", "Router", "Scalar", "Source", "SloTierSpec", "SpecDecode", "Strict", "Sweep",
    "SweepEntry", "Tokens", "Topology", "Workload", "instantiate", "routed_expert_params", "strings_in",
    "unknown_axes",
]
