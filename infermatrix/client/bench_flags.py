"""The `infermatrix bench` flags translated both ways: a parsed namespace into a BenchConfig
(``config_from_args``, bad input as one readable ClientInputError line) and a BenchConfig back
into the arguments that give it (``config_argv``, for the commands a run prints).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pydantic import ValidationError

from . import affinity
from .bench_parser import DATASET_ALIASES
from .config import BenchConfig
from .errors import ClientInputError
from .session_sources import SessionOptions, parse_synthetic

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
