"""The LM head of a step: one BF16 GEMM of (sampled tokens) x (vocab / tpa) x hidden,
vocab-parallel over the attention TP group, its weights streamed once a step. Engines compute
logits only for the tokens they sample (a prompt's last position, every decode and draft
token). The embedding is a lookup of its tokens' rows (tokens x hidden x 2 bytes, less than a
layer's activations): left out. Without a vocabulary size, nothing (the model's tables then
stay spread over its layers' dense GEMMs: operators.StepModel)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .tables import US, OperatorRow

if TYPE_CHECKING:
    from .config import SimConfig
    from .opfit import OperatorFit

# The LM head stays BF16 in quantised checkpoints: DeepSeek-V3 keeps "the embedding module, the
# output head" at their original precision under FP8 (its report, section 3.3.1), and vLLM's
# ParallelLMHead is a VocabParallelEmbedding, which FP8/FP4 quantisation methods leave
# unquantised unless a checkpoint quantises its head (GPTQ's lm_head_quantized)
LM_HEAD_DTYPE, LM_HEAD_BYTES = "bf16", 2.0


class LMHead:
    """Seconds the LM head takes on one GPU: from the measured profile's GEMM curve where the
    hardware has one, else from the ``gemm`` row (compute, the weights' stream, the floor)."""

    def __init__(self, cfg: SimConfig, gemm: OperatorRow, tpa: int, fit: OperatorFit | None):
        self.shape = (cfg.vocab_size / tpa, cfg.hidden_size)
        self.peak = cfg.attention_flops or cfg.peak_flops  # the 16-bit tensor cores
        self.hbm_bw = cfg.hbm_bw
        n, k = self.shape
        self.s_tok = 2 * n * k / (self.peak * gemm.compute_eff)
        self.stream_s = n * k * LM_HEAD_BYTES / (cfg.hbm_bw * gemm.memory_eff)
        self.floor = gemm.floor_us * US  # (a model without a vocabulary streams nothing: 0 s)
        self.fit = fit.gemm_for(LM_HEAD_DTYPE) if fit is not None else None

    def seconds(self, sampled: float, clock: float = 1.0) -> float:
        """The head over ``sampled`` tokens; ``clock``: the share of the measured (burst)
        compute a serving step sustains (operators.StepModel.clock)."""
        if not self.stream_s:
            return 0.0
        if self.fit is None:
            return max(self.s_tok * sampled, self.stream_s, self.floor)
        n, k = self.shape
        return self.fit.seconds(sampled, n, k, n * k * LM_HEAD_BYTES, self.peak * clock, self.hbm_bw)
