"""`infermatrix bench`: flag-compatible with bench_serving as InferenceMAX calls it.

``add_arguments(parser)`` adds the flags to any parser (the top-level CLI wires it as a
subcommand); ``main(argv)`` is the whole command. Bad input → one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import affinity
from .bench import run_benchmark_sync
from .config import BACKENDS, METRICS, TOKENIZER_MODES, BenchConfig, Timeouts
from .errors import ClientInputError
from .result import append_jsonl, default_filename, write_result
from .session_sources import SessionOptions, parse_synthetic
from .sessions import format_agentic
from .unsupported import unsupported_reason

# --session-* flag → SessionOptions field (error messages name the flag)
SESSION_FLAGS = {
    "session_source": "source",
    "session_dist": "synthetic",
    "session_affinity": "affinity",
    "session_duration": "duration_s",
    "session_warmup": "warmup_s",
    "no_mid_session": "mid_session",
    "session_replay_once": "replay_once",
    "session_output": "output",
    "session_tool_delay": "tool_delay_s",
    "session_max_context_tokens": "max_context_tokens",
    "session_time_scale": "time_scale",
}


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


# SGLang's dataset names for ours
DATASET_ALIASES = {"generated-shared-prefix": "shared-prefix", "mooncake": "trace"}


def _session_options(v: dict[str, Any]) -> dict[str, Any] | None:
    """The --session-* flags given, as SessionOptions fields (None: no flag given)."""
    opts: dict[str, Any] = {}
    for flag, name in SESSION_FLAGS.items():
        if v.get(flag) is not None:
            opts[name] = not v[flag] if flag == "no_mid_session" else v[flag]
    return opts or None


def _check_sessions(cfg: BenchConfig) -> None:
    """Session flags the model cannot check on its own: distributions and affinity."""
    opts = cfg.sessions or SessionOptions()
    try:
        affinity.parse(opts.affinity)
    except ClientInputError as e:
        raise ClientInputError(f"--session-affinity: {e}") from None
    if opts.synthetic:
        try:
            parse_synthetic(opts.synthetic, cfg.seed)
        except ClientInputError as e:
            raise ClientInputError(f"--session-dist: {e}") from None


def config_from_args(ns: argparse.Namespace) -> BenchConfig:
    """Namespace → BenchConfig. Raises ClientInputError with one readable line."""
    v = vars(ns)
    kw: dict[str, Any] = {}
    simple = (
        "backend",
        "base_url",
        "host",
        "port",
        "endpoint",
        "model",
        "served_model_name",
        "tokenizer",
        "tokenizer_mode",
        "trust_remote_code",
        "temperature",
        "dataset_name",
        "dataset_path",
        "num_prompts",
        "random_input_len",
        "random_output_len",
        "random_range_ratio",
        "range_ratio_style",
        "use_chat_template",
        "dsv4",
        "sharegpt_output_len",
        "shared_prefix_groups",
        "shared_prefix_len",
        "shared_prefix_questions",
        "trace_block_size",
        "trace_time_scale",
        "ignore_eos",
        "seed",
        "max_concurrency",
        "request_rate",
        "burstiness",
        "num_warmups",
        "num_workers",
        "save_result",
        "result_dir",
        "result_filename",
        "save_detailed",
        "max_error_rate",
        "disable_tqdm",
        "output_file",
        "profile",
    )
    for k in simple:
        if v.get(k) is not None:
            kw[k] = v[k]
    if kw.get("dataset_name") in DATASET_ALIASES:
        kw["dataset_name"] = DATASET_ALIASES[kw["dataset_name"]]
    timeouts = {
        k: v.get(f)
        for k, f in (
            ("connect", "connect_timeout"),
            ("idle", "idle_timeout"),
            ("total", "request_timeout"),
        )
        if v.get(f) is not None
    }
    if timeouts:
        kw["timeouts"] = timeouts
    if v.get("percentile_metrics"):
        kw["percentile_metrics"] = [
            m.strip() for m in v["percentile_metrics"].split(",") if m.strip()
        ]
    if v.get("metric_percentiles"):
        kw["metric_percentiles"] = [
            _float(p, "--metric-percentiles")
            for p in v["metric_percentiles"].split(",")
            if p.strip()
        ]
    if v.get("goodput"):
        kw["goodput"] = {
            k: _float(ms, "--goodput")
            for k, ms in (_pair(s, ":", "--goodput") for s in v["goodput"])
        }
    if v.get("metadata"):
        kw["metadata"] = dict(_pair(s, "=", "--metadata") for s in v["metadata"])
    if v.get("header"):
        kw["headers"] = dict(_pair(s, "=", "--header") for group in v["header"] for s in group)
    if v.get("disable_ignore_eos"):
        if v.get("ignore_eos"):
            raise ClientInputError("--ignore-eos and --disable-ignore-eos contradict each other")
        kw["ignore_eos"] = False
    elif v.get("ignore_eos") is None and str(v.get("backend") or "").startswith("sglang"):
        kw["ignore_eos"] = True  # SGLang's bench_serving ignores EOS unless told not to
    sessions = _session_options(v)
    if sessions is not None:
        kw["sessions"] = sessions
    if v.get("extra_body"):
        try:
            body = json.loads(v["extra_body"])
        except json.JSONDecodeError as e:
            raise ClientInputError(f"--extra-body is not valid JSON: {e.msg}") from e
        if not isinstance(body, dict):
            raise ClientInputError("--extra-body must be a JSON object")
        kw["extra_body"] = body
    try:
        cfg = BenchConfig(**kw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(x) for x in err["loc"]]
        msg = err["msg"].removeprefix("Value error, ")
        if loc[:1] == ["sessions"] and len(loc) > 1:
            flag = next((f for f, n in SESSION_FLAGS.items() if n == loc[1]), loc[1])
            where = flag
        else:
            where = ".".join(loc)
        flag = f"--{where.replace('_', '-')}: " if where else ""
        raise ClientInputError(f"{flag}{msg}") from e
    if cfg.dataset_name == "multi-turn":
        _check_sessions(cfg)
    return cfg


def _pair(s: str, sep: str, flag: str) -> tuple[str, str]:
    k, found, val = s.partition(sep)
    if not found or not k.strip():
        raise ClientInputError(f"{flag}: expected KEY{sep}VALUE, got {s!r}")
    return k.strip(), val.strip()


def _float(s: str, flag: str) -> float:
    try:
        return float(s)
    except ValueError:
        raise ClientInputError(f"{flag}: {s!r} is not a number") from None


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


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    return run_from_args(ns)


def run_from_args(ns: argparse.Namespace) -> int:
    """Run with an already-parsed namespace (for a parent CLI that used add_arguments)."""
    try:
        cfg = config_from_args(ns)
        result = run_benchmark_sync(cfg)
    except ClientInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    print(format_summary(result))
    if "agentic" in result:
        print(format_agentic(result))
    for note in result.get("notes") or []:
        print(f"warning: {note}", file=sys.stderr)
    if cfg.save_result or cfg.result_filename:
        path = Path(cfg.result_dir or ".") / (cfg.result_filename or default_filename(result))
        try:
            write_result(result, path)
        except OSError as e:
            print(f"error: cannot write result {path}: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"result written to {path}", file=sys.stderr)
    if cfg.output_file:
        try:
            append_jsonl(result, cfg.output_file)
        except OSError as e:
            print(f"error: cannot append to {cfg.output_file}: {e.strerror or e}", file=sys.stderr)
            return 2
    if not result["passed"]:
        print(
            f"error: error rate {result['error_rate']:.1%} exceeds {cfg.max_error_rate:.1%} "
            f"({result['error_counts']})",
            file=sys.stderr,
        )
        return 1
    return 0


def format_summary(r: dict[str, Any]) -> str:
    def num(v: Any, fmt: str = ".2f") -> str:
        return "n/a" if v is None else format(v, fmt)

    lines = [f"{' Serving Benchmark Result ':=^60}"]
    rows: list[tuple[str, Any, str]] = [
        ("Successful requests:", r["completed"], "d"),
        ("Failed requests:", r["failed"], "d"),
        ("Benchmark duration (s):", r["duration"], ".2f"),
        ("Total input tokens:", r["total_input_tokens"], "d"),
        ("Total generated tokens:", r["total_output_tokens"], "d"),
        ("Request throughput (req/s):", r["request_throughput"], ".2f"),
        ("Output token throughput (tok/s):", r["output_throughput"], ".2f"),
        ("Peak output token throughput (tok/s):", r["max_output_tokens_per_s"], ".2f"),
        ("Total token throughput (tok/s):", r["total_token_throughput"], ".2f"),
        ("Mean / max concurrency:", None, ""),
    ]
    for label, val, fmt in rows:
        if label.startswith("Mean / max"):
            lines.append(f"{label:<42}{r['mean_concurrency']:.2f} / {r['max_concurrent_requests']}")
        else:
            lines.append(f"{label:<42}{num(val, fmt)}")
    if r.get("request_goodput") is not None:
        lines.append(f"{'Request goodput (req/s):':<42}{r['request_goodput']:.2f}")
    if r["failed"]:
        lines.append(f"{'Errors:':<42}{r['error_counts']}")
    if r["requests_retokenized"]:
        lines.append(f"{'Output counts re-tokenized (no usage):':<42}{r['requests_retokenized']}")
    if r["output_token_mismatch"]:
        lines.append(f"{'Usage vs re-tokenized mismatches:':<42}{r['output_token_mismatch']}")
    for metric, title in (
        ("ttft", "Time to First Token"),
        ("tpot", "Time per Output Token (excl. 1st token)"),
        ("itl", "Inter-token Latency (per event)"),
        ("e2el", "End-to-end Latency"),
    ):
        lines.append(f"{title:-^60}")
        for key in [k for k in r if k.endswith(f"_{metric}_ms") and r[k] is not None]:
            stat = key.split("_")[0]
            label = {"mean": "Mean", "median": "Median", "std": "Std"}.get(stat, stat.upper())
            lines.append(f"{label + ' ' + metric.upper() + ' (ms):':<42}{num(r[key])}")
    lag = r["schedule_lag"]
    lines.append(f"{'Client':-^60}")
    lines.append(f"{'Schedule lag p99 / max (ms):':<42}{num(lag['p99_ms'])} / {num(lag['max_ms'])}")
    lines.append(f"{'Slot wait mean (ms):':<42}{num(r['slot_wait']['mean_ms'])}")
    lines.append("=" * 60)
    return "\n".join(lines)


# field -> flag, in the order a command line lists them (config_argv)
ARGV_ORDER = (
    ("backend", "--backend"),
    ("base_url", "--base-url"),
    ("model", "--model"),
    ("tokenizer", "--tokenizer"),
    ("dataset_name", "--dataset-name"),
    ("dataset_path", "--dataset-path"),
    ("random_input_len", "--random-input-len"),
    ("random_output_len", "--random-output-len"),
    ("random_range_ratio", "--random-range-ratio"),
    ("range_ratio_style", "--range-ratio-style"),
    ("use_chat_template", "--use-chat-template"),
    ("num_prompts", "--num-prompts"),
    ("num_warmups", "--num-warmups"),
    ("max_concurrency", "--max-concurrency"),
    ("request_rate", "--request-rate"),
    ("ignore_eos", "--ignore-eos"),
    ("seed", "--seed"),
    ("percentile_metrics", "--percentile-metrics"),
    ("metric_percentiles", "--metric-percentiles"),
    ("max_error_rate", "--max-error-rate"),
    ("disable_tqdm", "--disable-tqdm"),
)


def config_argv(cfg: BenchConfig) -> list[str]:
    """The `infermatrix bench` arguments that give ``cfg`` back (the fields a benchmark level
    sets; a default is left out, but the backend, dataset and lengths are always named)."""
    default = BenchConfig(backend=cfg.backend, tokenizer="words")
    always = {"backend", "dataset_name", "random_input_len", "random_output_len"}
    out: list[str] = []
    for name, flag in ARGV_ORDER:
        value = getattr(cfg, name)
        if value == getattr(default, name) and name not in always:
            continue
        if isinstance(value, bool):
            out.append(flag if value else "--disable-ignore-eos")  # only ignore_eos defaults on
        elif isinstance(value, list):
            out += [flag, ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)]
        elif isinstance(value, float):
            out += [flag, f"{value:g}"]
        elif value is not None:
            out += [flag, str(value)]
    return out
