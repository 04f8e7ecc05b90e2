"""The `infermatrix bench` command line as argparse declares it: every flag, its help text and
the parser that answers a bad one in one line. Unset flags stay None so BenchConfig's
defaults apply (bench_flags.py turns the namespace into a BenchConfig).
"""

from __future__ import annotations

import argparse
from typing import Any

from .config import BACKENDS, METRICS, TOKENIZER_MODES, BenchConfig, Timeouts
from .session_sources import SessionOptions
from .unsupported import unsupported_reason

# SGLang's dataset names for ours
DATASET_ALIASES = {"generated-shared-prefix": "shared-prefix", "mooncake": "trace"}

def _default(name: str) -> Any:
    f = BenchConfig.model_fields[name]
    return f.default_factory() if f.default_factory else f.default  # type: ignore[call-arg]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every `bench` flag. Unset flags stay None so BenchConfig's defaults apply."""
    a = parser.add_argument
    g = parser.add_argument_group("server")
    g.add_argument(
        "--backend",
        choices=BACKENDS,
        help="API flavour, named as vLLM and SGLang name them: vllm, openai, trtllm, sglang-oai "
        "use /v1/completions; vllm-chat, openai-chat, sglang-oai-chat /v1/chat/completions; "
        "sglang (= sglang-native) SGLang's native /generate. The sglang* backends also follow "
        "SGLang's defaults: EOS ignored (--disable-ignore-eos), SGLang's --random-range-ratio "
        "(default: vllm)",
    )
    g.add_argument(
        "--base-url", help="server root, e.g. http://127.0.0.1:8000 (overrides --host/--port)"
    )
    g.add_argument("--host", help="server host when --base-url is not given (default: 127.0.0.1)")
    g.add_argument(
        "--port", type=int, help="server port when --base-url is not given (default: 8000)"
    )
    g.add_argument("--endpoint", help="API path (default: by backend)")
    g.add_argument(
        "--model", help="model name to request (default: the first one /v1/models lists)"
    )
    g.add_argument(
        "--served-model-name",
        help="the model name requests carry when it is not --model (e.g. --model PATH for the "
        "tokenizer, --served-model-name NAME for the server)",
    )
    g.add_argument(
        "--tokenizer",
        help="directory holding tokenizer.json (and tokenizer_config.json), the file itself, "
        "or a hub id; default: the model's own, --model (or the served model) like vLLM and "
        "SGLang; 'words' counts one whitespace-separated word as one token (a warning is "
        "printed and recorded)",
    )
    g.add_argument(
        "--tokenizer-mode",
        metavar="MODE",
        help=f"{'/'.join(TOKENIZER_MODES)} (default: auto): the fast (tokenizers) tokenizer; "
        "slow is accepted and also uses it (vLLM's mistral and custom modes are not supported)",
    )
    g.add_argument(
        "--trust-remote-code",
        action="store_true",
        default=None,
        help="let a hub tokenizer run its own code (passed to transformers)",
    )
    g.add_argument(
        "--header",
        action="append",
        nargs="+",
        metavar="K=V",
        help="extra HTTP headers, several per flag (--header a=1 b=2) or repeated",
    )
    g.add_argument(
        "--extra-body",
        "--extra-request-body",
        dest="extra_body",
        metavar="JSON",
        help="JSON object merged into every request body (vLLM's --extra-body, SGLang's "
        "--extra-request-body)",
    )
    g.add_argument("--temperature", type=float, help="sampling temperature (default: 0)")

    g = parser.add_argument_group("workload")
    g.add_argument(
        "--dataset-name",
        choices=["random", "sharegpt", "shared-prefix", "multi-turn", "trace", *DATASET_ALIASES],
        help="default: random (SGLang's names: generated-shared-prefix = shared-prefix, "
        "mooncake = trace)",
    )
    g.add_argument(
        "--dataset-path",
        help="ShareGPT JSON or Mooncake-style trace JSONL; multi-turn: a .json trace manifest "
        "or a Mooncake JSONL (none: synthetic sessions)",
    )
    g.add_argument(
        "--num-prompts", type=int, help=f"requests to send (default: {_default('num_prompts')})"
    )
    g.add_argument(
        "--random-input-len",
        "--input-len",
        dest="random_input_len",
        type=int,
        help=f"input tokens L (default: {_default('random_input_len')})",
    )
    g.add_argument(
        "--random-output-len",
        "--output-len",
        dest="random_output_len",
        type=int,
        help=f"output tokens (default: {_default('random_output_len')})",
    )
    g.add_argument(
        "--random-range-ratio",
        type=float,
        help="r: input and output lengths are drawn uniformly, following the tool --backend "
        "names: sglang* backends like SGLang's bench_serving (and InferenceX's "
        "benchmark_serving.py) in [r*L, L], r in [0, 1]; the others like current vLLM bench "
        "serve in [L(1-r), L(1+r)], r in [0, 1). Default 0 (vLLM: exactly L; SGLang: [1, L]). "
        "The drawn ranges are recorded in the result",
    )
    g.add_argument(
        "--range-ratio-style",
        choices=["sglang", "vllm"],
        help="override whose --random-range-ratio applies: sglang = [r*L, L] (also "
        "InferenceX's fork), vllm = [L(1-r), L(1+r)] (default: by --backend)",
    )
    g.add_argument(
        "--use-chat-template",
        "--apply-chat-template",
        dest="use_chat_template",
        action="store_true",
        default=None,
        help="apply the tokenizer's chat template to every prompt; lengths count the templated "
        "text's tokens (random: the template's tokens are part of the input length)",
    )
    g.add_argument(
        "--dsv4",
        action="store_true",
        default=None,
        help="with --use-chat-template: DeepSeek-V4's chat encoding instead of the tokenizer's",
    )
    g.add_argument("--sharegpt-output-len", type=int, help="override ShareGPT reply lengths")
    g.add_argument(
        "--shared-prefix-groups",
        "--gsp-num-groups",
        type=int,
        dest="shared_prefix_groups",
        help=f"shared-prefix: groups (default: {_default('shared_prefix_groups')})",
    )
    g.add_argument(
        "--shared-prefix-len",
        "--gsp-system-prompt-len",
        type=int,
        dest="shared_prefix_len",
        help=f"shared-prefix: prefix tokens per group (default: {_default('shared_prefix_len')}); "
        "the question length is --random-input-len",
    )
    g.add_argument(
        "--shared-prefix-questions",
        "--gsp-prompts-per-group",
        type=int,
        dest="shared_prefix_questions",
        help=f"shared-prefix: questions per group (default: {_default('shared_prefix_questions')})",
    )
    g.add_argument(
        "--gsp-question-len",
        type=int,
        dest="random_input_len",
        help="shared-prefix: question tokens (SGLang's name for --random-input-len here)",
    )
    g.add_argument(
        "--gsp-output-len",
        type=int,
        dest="random_output_len",
        help="shared-prefix: output tokens (SGLang's name for --random-output-len here)",
    )
    g.add_argument(
        "--trace-block-size",
        "--timed-trace-chunk-hash-size",
        dest="trace_block_size",
        type=int,
        help="trace: tokens per hash id (default: 512)",
    )
    g.add_argument(
        "--trace-time-scale",
        "--mooncake-slowdown-factor",
        dest="trace_time_scale",
        type=float,
        help="trace: multiply timestamps, 2 = twice as slow (default: 1.0)",
    )
    g.add_argument(
        "--ignore-eos",
        action="store_true",
        default=None,
        help="ask the server to ignore EOS (default: no; sglang* backends: yes)",
    )
    g.add_argument(
        "--disable-ignore-eos",
        action="store_true",
        default=None,
        help="let the model stop at EOS (SGLang's flag; the default except for sglang*)",
    )
    g.add_argument("--seed", type=int, help="seed for lengths, content and arrivals (default: 0)")

    _session_arguments(parser)

    g = parser.add_argument_group("load")
    g.add_argument(
        "--max-concurrency",
        type=int,
        help="cap on in-flight requests (default: none); multi-turn: the number of agents "
        "(default: 1)",
    )
    g.add_argument(
        "--request-rate", type=float, help="requests/s, or inf to send all at once (default: inf)"
    )
    g.add_argument(
        "--burstiness", type=float, help="gamma shape of arrival gaps; 1 = Poisson (default: 1)"
    )
    g.add_argument(
        "--num-warmups",
        "--warmup-requests",
        dest="num_warmups",
        type=int,
        help="unmeasured warm-up requests (default: 0)",
    )
    g.add_argument("--num-workers", type=int, help="client processes sharing the load (default: 1)")
    g.add_argument(
        "--connect-timeout", type=float, help=f"seconds (default: {Timeouts().connect:g})"
    )
    g.add_argument(
        "--idle-timeout",
        type=float,
        help=f"seconds without a byte before a request fails (default: {Timeouts().idle:g})",
    )
    g.add_argument(
        "--request-timeout",
        type=float,
        help=f"total seconds per request (default: {Timeouts().total:g})",
    )

    g = parser.add_argument_group("results")
    g.add_argument("--percentile-metrics", help=f"comma list of {','.join(METRICS)} (default: all)")
    g.add_argument("--metric-percentiles", help="comma list, e.g. 50,90,99 (default: 99)")
    g.add_argument(
        "--goodput", nargs="+", metavar="METRIC:MS", help="SLOs, e.g. ttft:500 tpot:50 e2el:10000"
    )
    g.add_argument("--save-result", action="store_true", default=None, help="write the result JSON")
    g.add_argument("--result-dir", help="directory for the result JSON (default: .)")
    g.add_argument("--result-filename", help="file name (default: bench_serving style)")
    g.add_argument(
        "--output-file",
        metavar="PATH",
        help="append the result to PATH as one JSON line (SGLang's JSON Lines output)",
    )
    g.add_argument(
        "--profile",
        action="store_true",
        default=None,
        help="POST /start_profile before the measured run and /stop_profile after it "
        "(the server must have its profiler enabled)",
    )
    g.add_argument(
        "--save-detailed", action="store_true", default=None, help="add per-request lists"
    )
    g.add_argument(
        "--metadata", nargs="*", metavar="K=V", help="extra key=value pairs for the result"
    )
    g.add_argument(
        "--max-error-rate",
        type=float,
        help="exit 1 (result still written) when failed/total exceeds this (default: 0.05)",
    )
    a("--disable-tqdm", action="store_true", default=None, help="no progress lines")


def _session_arguments(parser: argparse.ArgumentParser) -> None:
    d = SessionOptions()
    g = parser.add_argument_group(
        "multi-turn sessions",
        "--dataset-name multi-turn: --max-concurrency closed-loop agents, each sending its next "
        "turn with the whole conversation so far (docs/agentic.md)",
    )
    g.add_argument(
        "--session-source",
        choices=["auto", "synthetic", "trace", "mooncake"],
        help="auto (default): synthetic without --dataset-path, a .json manifest is a trace, "
        "any other file Mooncake JSONL",
    )
    g.add_argument(
        "--session-dist",
        action="append",
        metavar="NAME=DIST",
        help="synthetic distribution (repeatable), e.g. turns=uniform:low=2,high=40 "
        "output_tokens=lognormal:median=150,sigma=1.2 sessions=64; names: sessions, turns, "
        "system_prompt_tokens, user_tokens, output_tokens, tool_delay_s",
    )
    g.add_argument(
        "--session-affinity",
        metavar="SPEC",
        help="where the conversation id goes: none (default), trtllm, x-session-id, dynamo, "
        "header:NAME or a router name",
    )
    g.add_argument(
        "--session-duration",
        type=float,
        metavar="SECONDS",
        help=f"measured window (default: {d.duration_s:g})",
    )
    g.add_argument(
        "--session-warmup",
        type=float,
        metavar="SECONDS",
        help=f"unmeasured time first (default: {d.warmup_s:g})",
    )
    g.add_argument(
        "--no-mid-session",
        action="store_true",
        default=None,
        help="every agent starts at turn 0 (default: an agent's first session starts at a "
        "random turn, its context pre-filled; that first request is not measured)",
    )
    g.add_argument(
        "--session-replay-once",
        action="store_true",
        default=None,
        help="run every session once from turn 0, then stop (trace replay)",
    )
    g.add_argument(
        "--session-output",
        choices=["exact", "natural"],
        help="exact (default): ignore_eos + max_tokens = the turn's target; natural: the "
        "model may stop early",
    )
    g.add_argument(
        "--session-tool-delay",
        type=float,
        metavar="SECONDS",
        help=f"Mooncake: delay between turns (default: {d.tool_delay_s:g})",
    )
    g.add_argument(
        "--session-max-context-tokens",
        type=int,
        metavar="N",
        help="a session ends before its context would pass N tokens",
    )
    g.add_argument(
        "--session-time-scale",
        type=float,
        metavar="S",
        help="divide tool delays by S (a simulated engine run S× faster; default: 1)",
    )


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        if message.startswith("unrecognized arguments: "):  # another tool's flag: say why not
            why = unsupported_reason(message.removeprefix("unrecognized arguments: ").split())
            message = why or message
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(prog: str = "infermatrix bench") -> argparse.ArgumentParser:
    p = _OneLineParser(
        prog=prog,
        description="Benchmark an OpenAI-compatible LLM server "
        "(bench_serving-compatible flags; metrics defined in docs/metrics.md).",
    )
    add_arguments(p)
    return p
