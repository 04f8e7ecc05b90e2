"""The schema of matrix/hardware.yaml and matrix/models.yaml: one accelerator, one model."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..safety import Word
from .field_types import (
    MAX_COUNT,
    PRECISIONS,
    Degree,
    Dtype,
    Figure,
    PositiveInt,
    Precision,
    Strict,
    Tokens,
)


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


class MixedPrecision(Strict):
    """The precisions a checkpoint stores its routed experts and everything else in."""

    experts: Precision
    rest: Precision

    @model_validator(mode="after")
    def _mixed(self) -> MixedPrecision:
        if self.experts == self.rest:
            raise ValueError(f"experts and rest are both {self.experts}: not a mixed checkpoint "
                             "(leave the entry out)")
        return self


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
    vocab_size: PositiveInt | None = Field(
        default=None,
        description="tokens in the vocabulary (config.json vocab_size): the embedding and LM "
        "head tables are vocab_size x hidden_size each; None where not established",
    )
    tied_embeddings: bool = Field(
        default=False,
        description="the LM head reuses the embedding table (config.json tie_word_embeddings)",
    )
    fp8_block_scaled: bool = Field(
        default=False,
        description="its FP8 checkpoint scales weights in 128 x 128 blocks and activations "
        "per 128-wide group (DeepSeek's, Kimi K2's, Qwen3's FP8 releases), not per tensor or "
        "channel: engines serve it with block-scaled GEMM kernels",
    )
    attention: Literal["mha", "gqa", "mla", "mla-sparse", "mla-compressed", "gqa-sliding"]
    kv_bytes_per_token: dict[Dtype, PositiveInt] = Field(
        description="KV-cache bytes per token summed over all layers, per KV dtype"
    )
    max_context: Tokens
    moe_experts: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0
    moe_active_experts: Annotated[int, Field(ge=0, le=MAX_COUNT)] = 0
    mixed_precision: dict[Precision, MixedPrecision] = Field(
        default_factory=dict,
        description="where the checkpoint served at a recipe's precision stores its routed "
        "experts and its other weights (attention, router, dense and shared MLPs, embeddings, "
        "LM head) at different precisions: that precision -> {experts, rest}. gpt-oss "
        "{mxfp4: {experts: mxfp4, rest: bf16}}; a precision not listed holds every weight",
    )

    @field_validator("mixed_precision")
    @classmethod
    def _mixed_needs_experts(cls, value: dict[str, MixedPrecision],
                             info: ValidationInfo) -> dict[str, MixedPrecision]:
        experts, active = info.data.get("moe_experts", 0), info.data.get("moe_active_experts", 0)
        if value and experts <= active:
            raise ValueError("only a model with routed experts (moe_experts above "
                             "moe_active_experts) can store them at a precision of their own")
        return value

    @model_validator(mode="after")
    def _active_le_total(self) -> Model:
        if self.active_params_b > self.total_params_b:
            raise ValueError("active_params_b cannot exceed total_params_b")
        if self.attention_heads % self.kv_heads:
            raise ValueError("attention_heads must be a multiple of kv_heads")
        return self

    @property
    def expert_params_b(self) -> float:
        """Parameters in routed experts, billions."""
        return routed_expert_params(self.total_params_b, self.active_params_b,
                                    self.moe_experts, self.moe_active_experts)

    def param_bytes(self, precision: str) -> tuple[float, float]:
        """Bytes per parameter of (the routed experts, every other weight) at a run's
        precision: the precision's own for both unless the checkpoint mixes them."""
        mixed = self.mixed_precision.get(precision)  # type: ignore[call-overload]
        if mixed is None:
            return PRECISIONS[precision][1], PRECISIONS[precision][1]
        return PRECISIONS[mixed.experts][1], PRECISIONS[mixed.rest][1]

    def weight_bytes_b(self, precision: str) -> float:
        """Bytes of all weights at a run's precision, billions."""
        experts, rest = self.param_bytes(precision)
        routed = self.expert_params_b
        return routed * experts + (self.total_params_b - routed) * rest


def routed_expert_params(total: float, active: float, experts: int, per_token: int) -> float:
    """Parameters in routed experts: (total − active) / (E − k) per expert, × E; 0 for a dense
    model (the embeddings, attention and shared parts are what every token uses)."""
    if experts <= per_token or experts == 0:
        return 0.0
    return (total - active) / (experts - per_token) * experts
