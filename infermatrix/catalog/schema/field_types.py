"""The catalog schema's shared pieces: the strict base model every entity derives from, the
bounds on numbers (beyond them a value is a typo or an attack) and the field types built on them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..safety import EnvName, NoControls

Name = Annotated[str, Field(min_length=1, max_length=200,
                            pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")]
# Bounds on what a benchmark can use: beyond them a value is a typo (or an attack), and
# arithmetic on it (prompt counts, time-outs) would overflow or run for ever.
MAX_COUNT = 10**9  # model dimensions, bytes per token, prompt counts
MAX_TOKENS = 1 << 24  # sequence lengths and context windows (16.7M tokens)
MAX_CONCURRENCY = 1 << 20  # concurrent requests per level
MAX_GPUS = 1 << 16  # parallel degrees, instances, GPUs and nodes of a fleet
MAX_PER_CONCURRENCY = 10_000  # prompts or warm-ups per unit of concurrency
MAX_FIGURE = 1e12  # any physical figure (GB, TB/s, TFLOP/s, W, $/h, tokens/s)
MAX_SECONDS = 7 * 24 * 3600.0  # durations and delays
PositiveInt = Annotated[int, Field(ge=1, le=MAX_COUNT)]
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
Degree = Annotated[int, Field(ge=1, le=MAX_GPUS)]
Figure = Annotated[float, Field(gt=0, le=MAX_FIGURE)]
Dtype = Literal["bf16", "fp16", "fp8", "fp4", "int8"]

# Precision name -> (dtype the matmuls run in, bytes per weight parameter incl. block scales).
PRECISIONS: dict[str, tuple[str, float]] = {
    "bf16": ("bf16", 2.0),
    "fp16": ("fp16", 2.0),
    "fp8": ("fp8", 1.0),
    "nvfp4": ("fp4", 0.5625),  # 4-bit values + one fp8 scale per 16
    "mxfp4": ("fp4", 0.53125),  # 4-bit values + one e8m0 scale per 32
    "fp4": ("fp4", 0.5625),
    "w8a8-int8": ("int8", 1.0),
    "w4a8": ("int8", 0.5625),
    # 4-bit weights dequantised to bf16 in the kernel (e.g. FP4 experts through Marlin on
    # Hopper, which has no FP4 tensor cores): FP4 memory, bf16 compute.
    "w4a16": ("bf16", 0.5625),
}
Precision = Literal["bf16", "fp16", "fp8", "nvfp4", "mxfp4", "fp4", "w8a8-int8", "w4a8", "w4a16"]

# A value that may follow a command-line flag or sit in an engine config file.
Scalar = str | int | float | bool
# an environment: variable names (GNU env would read '-S...' as its option) and values free
# of control characters
EnvMap = dict[EnvName, Annotated[Scalar, NoControls]]
ArgValue = Scalar | list[Any] | dict[str, Any] | None



class Strict(BaseModel):
    # strict: a boolean is not a number (concurrency: true is not 1) and numbers are not text;
    # no inf/nan anywhere
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
