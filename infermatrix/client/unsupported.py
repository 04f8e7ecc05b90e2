"""Flags of vLLM's, SGLang's and InferenceX's benchmark clients that `bench` does not take,
and why (the "not supported" rows of docs/compatibility.md; tests/client check the two agree).

argparse would say "unrecognized arguments"; a user coming from those tools gets the reason.
"""

from __future__ import annotations

# reason -> the flags it answers
_REASONS: dict[str, tuple[str, ...]] = {
    "that dataset is not built in (no dataset downloads)": (
        "--agentic-max-turns", "--bfcl-categories", "--blazedit-max-distance",
        "--blazedit-min-distance", "--custom-ensure-client-side-data", "--custom-output-len",
        "--dataset-offset", "--hf-name", "--hf-output-len", "--hf-split", "--hf-subset",
        "--sharegpt-context-len", "--sonnet-input-len", "--sonnet-output-len",
        "--sonnet-prefix-len", "--spec-bench-category", "--spec-bench-output-len",
        "--speed-bench-category", "--speed-bench-dataset-subset", "--speed-bench-output-len",
    ),
    "sampling and output options: pass them in --extra-body": (
        "--best-of", "--chat-template-kwargs", "--frequency-penalty", "--logprob-start-len",
        "--logprobs", "--min-p", "--presence-penalty", "--repetition-penalty", "--return-logprob",
        "--return-routed-experts", "--token-ids-logprob", "--top-k", "--top-logprobs-num",
        "--top-p", "--use-beam-search",
    ),
    "text only": (
        "--asr-max-audio-len-sec", "--asr-min-audio-len-sec", "--enable-multimodal-chat",
        "--image-content", "--image-count", "--image-format", "--image-resolution",
        "--random-image-count", "--random-mm-base-items-per-request", "--random-mm-bucket-config",
        "--random-mm-limit-mm-per-prompt", "--random-mm-num-mm-items-range-ratio",
    ),
    "shared prefixes: --dataset-name shared-prefix (groups × questions); multi-turn: --dataset-name multi-turn": (
        "--gsp-fast-prepare", "--gsp-group-distribution", "--gsp-num-turns", "--gsp-ordered",
        "--gsp-range-ratio", "--gsp-send-routing-key", "--gsp-zipf-alpha",
        "--prefix-repetition-num-prefixes", "--prefix-repetition-output-len",
        "--prefix-repetition-prefix-len", "--prefix-repetition-suffix-len", "--random-prefix-len",
    ),
    "--profile calls the front door's /start_profile and /stop_profile only": (
        "--pd-separated", "--profile-activities", "--profile-by-stage", "--profile-decode-url",
        "--profile-num-steps", "--profile-output-dir", "--profile-prefill-url",
        "--profile-prefix", "--profile-stages", "--profile-start-step", "--profile-steps",
    ),
    "--dataset-name trace reads Mooncake JSONL (timestamp in ms, input_length, output_length, hash_ids) and always follows its timestamps": (
        "--mooncake-num-rounds", "--mooncake-workload", "--no-self-timed", "--self-timed",
        "--timed-trace-label-hash-ids", "--timed-trace-label-input-length",
        "--timed-trace-label-output-length", "--timed-trace-label-timestamp",
        "--timed-trace-sec-multiplier", "--use-trace-timestamps",
    ),
    "no such behaviour here: ShareGPT is shuffled by --seed and never oversampled; no template unless --use-chat-template; no embeddings": (
        "--disable-shuffle", "--no-oversample", "--no-reranker", "--random-batch-size",
        "--skip-chat-template",
    ),
    "not needed by our client (several processes: --num-workers)": (
        "--fake-prefill", "--print-requests", "--prompt-suffix", "--rust-client",
        "--rust-worker-threads",
    ),
    "LoRA adapters are not benchmarked": (
        "--lora-assignment", "--lora-modules", "--lora-name", "--lora-request-distribution",
        "--lora-zipf-alpha",
    ),
    "plots come from results: `infermatrix report`": (
        "--plot-dataset-stats", "--plot-throughput", "--plot-timeline",
        "--timeline-itl-thresholds",
    ),
    "one arrival process per run (--request-rate, --burstiness)": (
        "--probe-request-rate", "--ramp-up-end-rps", "--ramp-up-start-rps", "--ramp-up-strategy",
    ),
    "always streamed: TTFT and ITL need the stream": (
        "--disable-stream", "--no-stream",
    ),
    "`infermatrix run` flushes the prefix cache between levels where the workload asks": (
        "--flush-cache", "--flush-cache-timeout",
    ),
    "the file name is bench_serving's; use --metadata for labels": (
        "--label", "--tag",
    ),
    "prompts are built to exact token lengths with the tokenizer and sent as text": (
        "--skip-tokenizer-init", "--tokenize-prompt",
    ),
    "use --output-file (one JSON line per run, appended)": (
        "--append-result",
    ),
    "multi-turn results report cached tokens (`agentic.cached_token_ratio`)": (
        "--cache-report",
    ),
    "plain HTTP client": (
        "--insecure",
    ),
    "use --save-detailed": (
        "--output-details",
    ),
    "prompts are built in one process before the run (--num-workers: client processes that send)": (
        "--random-num-workers",
    ),
    "one probe request; it fails as one line if the server is not up (`infermatrix run` waits for readiness)": (
        "--ready-check-timeout-sec",
    ),
    "the server assigns request ids": (
        "--request-id-prefix",
    ),
}

UNSUPPORTED: dict[str, str] = {flag: why for why, flags in _REASONS.items() for flag in flags}


def unsupported_reason(tokens: list[str]) -> str | None:
    """The first unsupported flag among ``tokens`` (as argparse lists unrecognized ones) with
    its reason, or None."""
    for token in tokens:
        flag = token.split("=", 1)[0]
        if flag in UNSUPPORTED:
            return f"{flag} is not supported: {UNSUPPORTED[flag]} (docs/compatibility.md)"
    return None
