"""The batch limits an engine picks for itself when the recipe (or a published row) leaves them
unset: the largest running batch and the token budget of one step.

Engines size these by the accelerator, so a simulation that used one fixed default would run a
vLLM server on an H100 at a quarter of the batch vLLM itself allows. Facts from the engines'
sources:

- vLLM (``EngineArgs.get_batch_defaults``, 0.9 and later): on an accelerator with at least
  70 GiB that is not an A100, 1,024 sequences and a budget of 8,192 tokens for ``vllm serve``
  (16,384 for the offline ``LLM`` class: ``vllm bench throughput``, ``benchmark_latency``);
  elsewhere 256 sequences and 2,048 tokens (8,192 offline).
- SGLang (``server_args.py``, ``model_runner``): ``chunked_prefill_size`` 2,048 below 35 GB,
  8,192 below 160 GB (H100, H200, H20, A100), 16,384 above (B200, MI300X); the running
  requests per DP worker min(max(capacity / context × 512, 2,048), 4,096): at least 2,048.
- TensorRT-LLM (LLM API and ``trtllm-serve`` defaults): ``max_batch_size`` 2,048,
  ``max_num_tokens`` 8,192.

Other engines take tuning.py's ``max_num_seqs`` and ``max_num_batched_tokens``.

SGLang under ``--enable-dp-attention`` divides ``chunked_prefill_size`` (the user's or the default)
among the DP ranks, each of which runs its own scheduler with what is left as its prefill budget
(``server_args.py``, ``_handle_data_parallelism``: "DP attention is enabled. The chunked prefill
size is adjusted to ... to avoid MoE kernel issues"): ``// dp_size`` since PR #4390 ("Improve DP
attention", merged 2025-03-13, which let dp be smaller than tp: 0.4.4), ``// 2`` in the builds
before it, which also forced dp = tp (0.4.0 to 0.4.3). A disabled chunked prefill (-1)
stays disabled: the rank's budget is then ``max_prefill_tokens``, undivided.

vLLM's V0 engine (the default before 0.8.0, when V1 became it) did not chunk prompts of MLA
models (DeepSeek V2/V3/R1): 0.7.1 forced chunked prefill off for them (vllm-project/vllm#12642,
"MLA is enabled; forcing chunked prefill and prefix caching to be disabled"), and V0's own
defaults keep it off after MLA gained chunked prefill (``EngineArgs._set_default_args_v0``:
"Chunked prefill not supported for Multimodal or MLA in V0"). Without chunked prefill V0 admits
whole prompts up to a budget of max(max_model_len, 2,048) tokens a step (``SchedulerConfig``)
and 256 sequences, and a step that prefills runs no decode (``Scheduler._schedule_default``:
"Don't schedule decodes if prefills are scheduled").
"""

from __future__ import annotations

GIB = 2**30
V0_BEFORE = (0, 8)  # vLLM's V1 engine is the default from 0.8.0
V0_MAX_NUM_SEQS = 256
V0_MIN_BATCHED_TOKENS = 2048  # V0's _DEFAULT_MAX_NUM_BATCHED_TOKENS
SGLANG_CHUNK_BY_DP = (0, 4, 4)  # SGLang divides the chunk by dp, not by 2, from this release


def unchunked_prefill(engine: str, release: tuple[int, ...] | None, attention: str) -> bool:
    """Whether the engine build, left at its defaults, prefills whole prompts in steps of their
    own: vLLM's V0 engine (a stated release before 0.8) serving an MLA model."""
    return (engine == "vllm" and release is not None and release < V0_BEFORE
            and attention.startswith("mla"))


def sglang_rank_chunk(release: tuple[int, ...] | None, dp: int, chunk: int, chunked: bool) -> int:
    """Tokens one SGLang attention-DP rank prefills a step at most: the instance's chunked
    prefill size ``chunk`` divided by dp (by 2 before 0.4.4; an unstated release is taken as
    current), or all of ``chunk`` where chunked prefill is off (``chunk`` is then
    max_prefill_tokens)."""
    if not chunked:
        return chunk
    return max(1, chunk // (2 if release is not None and release < SGLANG_CHUNK_BY_DP else dp))


def default_limits(engine: str, memory_gb: float, hardware: str,
                   offline: bool = False) -> tuple[int, int] | None:
    """(max running sequences, token budget a step) the engine defaults to on this
    accelerator, per instance or, under attention DP, per rank as the engine counts them; None
    for an engine whose defaults are not known here."""
    memory = memory_gb * GIB  # datasheet figures are binary: "80 GB" is 80 GiB
    if engine == "vllm":
        large = memory >= 70 * GIB and "a100" not in hardware.casefold()
        if large:
            return 1024, (16384 if offline else 8192)
        return 256, (8192 if offline else 2048)
    if engine == "sglang":
        if memory < 35 * GIB:
            chunk = 2048
        elif memory < 160 * GIB:
            chunk = 8192
        else:
            chunk = 16384
        return 2048, chunk
    if engine == "trtllm":
        return 2048, 8192
    return None
