"""The device memory one simulated GPU can give to weights and KV cache: the share of the
datasheet's HBM the driver leaves to the process, and what each engine holds beside weights
and KV within its memory fraction (its profiling pass's activations, memory outside torch).
"""

from __future__ import annotations

from .engine_defaults import GIB

GB = 1e9  # decimal: bandwidths (GB/s) and the sizes a summary reports
# Device memory as datasheets write it is binary: HBM comes in stacks of 16, 24 or 36 GiB, and
# "80 GB" is 80 GiB, of which the driver leaves 99% to the process (an H100 80GB reports a total
# of 79.22 GiB in vLLM's memory profile, vllm-project/vllm PR #10511; 85.0e9 bytes in the
# measured profile's env).
USABLE_MEMORY = 0.99
# vLLM sizes its KV cache as gpu-memory-utilization x total memory less the weights, the
# activation peak of its profiling forward pass and the memory outside torch (CUDA context,
# cuBLAS workspaces, and with TP the NCCL and custom all-reduce buffers). PR #10511's profile of
# Llama 3 8B on an H100: activation peak 1.26 GiB, non-torch 1.79 GiB at TP1 and 3.58 GiB at TP2.
# TensorRT-LLM's PyTorch backend likewise runs a profiling forward pass before it gives its
# free_gpu_memory_fraction of what is left to KV (NVIDIA/TensorRT-LLM PR #3467 logs the weights'
# and the activations' memory apart). SGLang's KV pool is what the device reports free after the
# weights load, less (1 - mem-fraction-static) of the total (model_runner's profile_max_num_token),
# so it loses the non-torch memory but keeps its activations outside the fraction.
PROFILING_ENGINES = ("vllm", "trtllm")
ACTIVATION_PEAK = 1.26 * GIB
NON_TORCH = {1: 1.79 * GIB, 2: 3.58 * GIB}  # by whether TP > 1


def engine_reserve(engine: str, tp: int) -> float:
    """Bytes per GPU the engine holds beside weights and KV within its memory fraction."""
    non_torch = NON_TORCH[2 if tp > 1 else 1]
    if engine in PROFILING_ENGINES:
        return ACTIVATION_PEAK + non_torch
    return non_torch if engine == "sglang" else 0.0
