"""The schema of matrix/hardware.yaml and matrix/models.yaml: one accelerator, one model."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ..safety import Word
from .field_types import MAX_COUNT, Degree, Dtype, Figure, PositiveInt, Strict, Tokens


class Hardware(Strict):
    """One accelerator as a performance model needs it. Figures are per GPU (or NPU die)."""

    vendor: Literal["nvidia", "amd", "huawei", "cpu"]
    display_name: str
    memory_gb: Figure
    hbm_tbps: Figure
    tflops: dict[Dtype, Figure]
    gpus_per_node: Degree
    scale_up_domain: Degree = Field(
        description="GPUs that share the scale-up fabric (8 on an HGX node, 72 on an NVL72 rack)"
    )
    scale_up_gbps: Figure = Field(
        description="per-GPU unidirectional scale-up bandwidth, GB/s"
    )
    tdp_w: Figure
    usd_per_gpu_hour: Figure
    profile: str | None = Field(
        default=None,
        description="measured operator profile the simulator times this hardware's GEMMs and "
        "attention with: a built-in name (infermatrix/sim/data/profiles/NAME.json) or a path "
        "relative to the catalog root, as `infermatrix sim profile` writes it (docs/sim.md)",
    )

    @field_validator("tflops")
    @classmethod
    def _has_bf16(cls, v: dict[str, float]) -> dict[str, float]:
        if "bf16" not in v and "fp16" not in v:
            raise ValueError("must give at least bf16 (or fp16) TFLOP/s")
        return v


class Model(Strict):
    """What a performance model and a launcher need to know about one model."""

    hf_id: Word
    display_name: str
    total_params_b: Figure
    active_params_b: Figure
    layers: PositiveInt
    hidden_size: PositiveInt
    attention_heads: PositiveInt
    kv_heads: PositiveInt
    head_dim: PositiveInt | None = Field(
        default=None,
        description="attention head dimension, where it is not hidden_size / attention_heads "
        "(config.json head_dim: Qwen3 128, gpt-oss 64)",
    )
    attention: Literal["mha", "gqa", "mla", "mla-sparse", "mla-compressed", "gqa-sliding"]
    kv_bytes_per_token: dict[Dtype, PositiveInt] = Field(
        description="KV-cache bytes per token summed over all layers, per KV dtype"
    )
    max_context: Tokens
    moe_experts: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0
    moe_active_experts: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0

    @model_validator(mode="after")
    def _active_le_total(self) -> Model:
        if self.active_params_b > self.total_params_b:
            raise ValueError("active_params_b cannot exceed total_params_b")
        if self.attention_heads % self.kv_heads:
            raise ValueError("attention_heads must be a multiple of kv_heads")
        return self
