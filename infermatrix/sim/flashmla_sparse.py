"""The query heads vLLM's FlashMLA sparse kernels compute on one rank (DeepSeek V3.2).

DeepSeek sparse attention runs MLA in its absorbed (MQA) form, and vLLM's FLASHMLA_SPARSE
backend (vllm/v1/attention/backends/mla/flashmla_sparse.py) calls FlashMLA's kernels, which
take only some head counts. It pads a rank's query heads with zeros up to what the kernel
takes and drops the padded outputs, so the attention costs the padded heads' FLOPs:

- the BF16 sparse kernel ("prefill" kernel: every prefill, and with a BF16 cache every decode
  too) wants a multiple of 64 heads on Hopper and of 128 on Blackwell ("Prefill BF16 kernel
  requires 64 on Hopper, 128 on Blackwell", ``prefill_padding``);
- the FP8 decode kernel (an FP8 cache's decodes, and below 32 heads a rank its prefills too,
  the backend's "mixed batch" mode, ``MIN_HEADS_FOR_BF16_PREFILL``) wants 64 or 128
  (``_compute_fp8_decode_padded_heads``).

Under tensor parallelism a rank holds 128 / TP of DeepSeek V3.2's heads: 16 at TP8, so its
sparse attention computes 4x the heads it needs on Hopper. vLLM's DeepSeek-V3.2 tracking issue
(vllm-project/vllm #31473, December 2025) lists "Support TP without padding" as open work; the
padding is still in the backend today. SGLang's NSA backend, TensorRT-LLM and other hardware
are not covered here (their kernels and head counts differ), nor DeepSeek V4's attention.
"""

from __future__ import annotations

from .names import BLACKWELL

FP8_KERNEL_MIN_BF16_PREFILL_HEADS = 32  # below it an FP8 cache prefills with the decode kernel
# caches the FP8 decode kernel reads (vLLM's fp8_ds_mla and nvfp4_ds_mla formats)
QUANTIZED_CACHE = frozenset({"fp8", "fp4"})


def padded_heads(heads: float, hardware: str, kv_dtype: str, prefill: bool) -> float:
    """Heads FlashMLA's sparse kernel computes for ``heads`` query heads on one rank."""
    fp8_kernel = kv_dtype in QUANTIZED_CACHE and (
        not prefill or heads < FP8_KERNEL_MIN_BF16_PREFILL_HEADS)
    if fp8_kernel:
        return 64.0 if heads <= 64 else 128.0
    multiple = 128 if hardware in BLACKWELL else 64
    return float(-(-int(heads) // multiple) * multiple)


def head_padding(engine: str, attention: str, vendor: str, hardware: str, kv_dtype: str,
                 heads: float, prefill: bool) -> float:
    """The factor a rank's sparse-attention FLOPs grow by: padded over actual heads (1 where
    vLLM's FlashMLA sparse backend does not run)."""
    if engine != "vllm" or attention != "mla-sparse" or vendor != "nvidia" or heads <= 0:
        return 1.0
    return padded_heads(heads, hardware, kv_dtype, prefill) / heads
