"""BenchConfig: every setting of one benchmark run (the CLI flags, as a typed record)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .session_sources import SessionOptions

Backend = Literal[
    "vllm",
    "vllm-chat",
    "openai",
    "openai-chat",
    "trtllm",
    "sglang",
    "sglang-native",
    "sglang-oai",
    "sglang-oai-chat",
]
BACKENDS: tuple[str, ...] = Backend.__args__  # type: ignore[attr-defined]
DatasetName = Literal["random", "sharegpt", "shared-prefix", "multi-turn", "trace"]
METRICS = ("ttft", "tpot", "itl", "e2el")
RangeStyle = Literal["sglang", "vllm"]

# Backends that talk to /v1/completions, to SGLang's native /generate; the rest talk to
# /v1/chat/completions. Names as SGLang's bench_serving and vLLM's bench serve use them.
COMPLETION_BACKENDS = frozenset({"vllm", "trtllm", "openai", "sglang-oai"})
NATIVE_BACKENDS = frozenset({"sglang", "sglang-native"})
# Whose --random-range-ratio a backend follows (BenchConfig.length_range)
SGLANG_BACKENDS = frozenset({"sglang", "sglang-native", "sglang-oai", "sglang-oai-chat"})
# deepseek_v4: InferenceX loads DeepSeek-V4's tokenizer through vLLM; its tokenizer.json is the same
TOKENIZER_MODES = ("auto", "hf", "fast", "slow", "deepseek_v4")


class Timeouts(BaseModel):
    """Seconds. ``idle`` is the longest gap between two reads of one response."""

    model_config = ConfigDict(extra="forbid")

    connect: float = Field(30.0, gt=0)
    idle: float = Field(300.0, gt=0)
    total: float = Field(6 * 3600.0, gt=0)


# The most tokens one prompt or answer may have: beyond the longest context any served model
# has (10M tokens), and the catalog's bound on sequence lengths (catalog/schema/field_types.py's
# MAX_TOKENS, 2^24). Checked before a prompt is built: 10^9 tokens would take the client
# minutes and gigabytes of text before the server refused it.
MAX_TOKENS = 1 << 24


class BenchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # server
    backend: Backend = "vllm"
    base_url: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    endpoint: str | None = None  # None: /v1/completions or /v1/chat/completions by backend
    model: str | None = None  # None: the first model the server lists
    served_model_name: str | None = None  # the name in requests when not --model (vLLM's)
    # None: the model's own (--model, or the served model) like vLLM and SGLang; "words": one
    # word = one token (docs/metrics.md), only on request
    tokenizer: str | None = None
    tokenizer_mode: str = "auto"
    trust_remote_code: bool = False
    headers: dict[str, str] = Field(default_factory=dict)
    extra_body: dict[str, object] = Field(default_factory=dict)
    temperature: float | None = 0.0

    # workload
    dataset_name: DatasetName = "random"
    dataset_path: str | None = None
    num_prompts: int = Field(1000, ge=1)
    random_input_len: int = Field(1024, ge=1)
    random_output_len: int = Field(128, ge=1)
    # None: 0, the default of vLLM and SGLang; its meaning follows range_ratio_style
    random_range_ratio: float | None = Field(None, ge=0.0, le=1.0)
    range_ratio_style: RangeStyle | None = None  # None: by backend (see length_range)
    use_chat_template: bool = False  # apply the tokenizer's chat template to every prompt
    dsv4: bool = False  # with use_chat_template: DeepSeek-V4's encoding, not the tokenizer's
    sharegpt_output_len: int | None = Field(None, ge=1)
    shared_prefix_groups: int = Field(8, ge=1)
    shared_prefix_len: int = Field(2048, ge=0)
    shared_prefix_questions: int = Field(16, ge=1)
    trace_block_size: int = Field(512, ge=1)
    trace_time_scale: float = Field(1.0, gt=0)
    # multi-turn: closed-loop agent sessions (None: SessionOptions() when multi-turn)
    sessions: SessionOptions | None = None
    ignore_eos: bool = False
    seed: int = 0

    # load shape
    max_concurrency: int | None = Field(None, ge=1)
    request_rate: float = Field(math.inf, gt=0)
    burstiness: float = Field(1.0, gt=0)
    num_warmups: int = Field(0, ge=0)
    num_workers: int = Field(1, ge=1)
    profile: bool = False  # POST /start_profile before and /stop_profile after the run

    # reporting
    goodput: dict[str, float] = Field(default_factory=dict)  # metric -> SLO in ms
    percentile_metrics: list[str] = Field(default_factory=lambda: list(METRICS))
    metric_percentiles: list[float] = Field(default_factory=lambda: [99.0])
    metadata: dict[str, str] = Field(default_factory=dict)
    max_error_rate: float = Field(0.05, ge=0.0, le=1.0)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    disable_tqdm: bool = False
    save_detailed: bool = False
    save_result: bool = False
    result_dir: str | None = None
    result_filename: str | None = None
    output_file: str | None = None  # SGLang's: the result appended as one JSON line

    @field_validator("random_input_len", "random_output_len", "sharegpt_output_len",
                     "shared_prefix_len")
    @classmethod
    def _token_bound(cls, v: int | None) -> int | None:
        if v is not None and v > MAX_TOKENS:
            raise ValueError(f"at most {MAX_TOKENS:,} tokens (more than any model's context), "
                             f"got {v:,}")
        return v

    @field_validator("goodput")
    @classmethod
    def _goodput_keys(cls, v: dict[str, float]) -> dict[str, float]:
        for key, ms in v.items():
            if key not in ("ttft", "tpot", "e2el"):
                raise ValueError(f"goodput metric must be ttft, tpot or e2el, not {key!r}")
            if ms <= 0:
                raise ValueError(f"goodput {key} must be > 0 ms")
        return v

    @field_validator("percentile_metrics")
    @classmethod
    def _metric_names(cls, v: list[str]) -> list[str]:
        bad = [m for m in v if m not in METRICS]
        if bad:
            raise ValueError(f"unknown percentile metric(s) {bad}; choose from {list(METRICS)}")
        return v

    @field_validator("metric_percentiles")
    @classmethod
    def _percentiles(cls, v: list[float]) -> list[float]:
        if any(not 0 < p < 100 for p in v):
            raise ValueError("metric percentiles must be in (0, 100)")
        return v

    @field_validator("tokenizer_mode")
    @classmethod
    def _tokenizer_mode(cls, v: str) -> str:
        if v not in TOKENIZER_MODES:
            raise ValueError(
                f"tokenizer mode {v!r} is not supported (only {', '.join(TOKENIZER_MODES)}: "
                "prompts are built with the `tokenizers` library)"
            )
        return v

    @model_validator(mode="after")
    def _consistent(self) -> BenchConfig:
        if self.dsv4 and not self.use_chat_template:
            raise ValueError("--dsv4 requires --use-chat-template")
        if self.ratio_style == "vllm" and self.ratio >= 1.0:
            raise ValueError(
                "--random-range-ratio must be < 1 with vLLM's range [L(1-r), L(1+r)] "
                "(--backend vllm*/openai*/trtllm; --range-ratio-style sglang for [r*L, L])"
            )
        if self.dataset_name == "multi-turn" and self.backend in NATIVE_BACKENDS:
            raise ValueError("multi-turn sessions need a chat backend, not SGLang's /generate")
        t = self.timeouts
        if t.idle > t.total:
            raise ValueError("idle timeout must not exceed the total timeout")
        if self.dataset_name in ("sharegpt", "trace") and not self.dataset_path:
            raise ValueError(f"--dataset-name {self.dataset_name} needs --dataset-path")
        if self.dataset_name == "multi-turn":
            self._closed_loop()
        elif self.sessions is not None:
            raise ValueError("session settings need --dataset-name multi-turn")
        return self

    def _closed_loop(self) -> None:
        """multi-turn: agents send their next turn when the previous answer is in; the knobs of
        the open-loop datasets have no meaning there, so setting them is a mistake."""
        if not math.isinf(self.request_rate):
            raise ValueError(
                "--request-rate does not apply to multi-turn: the load is closed-loop "
                "(agents = --max-concurrency)"
            )
        if self.num_workers > 1:
            raise ValueError("--num-workers does not apply to multi-turn sessions yet")
        if self.num_warmups:
            raise ValueError("--num-warmups does not apply to multi-turn: use --session-warmup")
        opts = self.sessions or SessionOptions()
        kind = opts.kind(self.dataset_path)
        if kind != "synthetic" and not self.dataset_path:
            raise ValueError(f"--session-source {kind} needs --dataset-path")
        if kind != "synthetic" and opts.synthetic:
            raise ValueError(f"--session-dist is for synthetic sessions, not {kind}")
        if kind == "synthetic" and self.dataset_path:
            raise ValueError("synthetic sessions read no --dataset-path")

    # derived -----------------------------------------------------------
    @property
    def is_native(self) -> bool:
        """SGLang's native /generate API (cumulative text, meta_info)."""
        return self.backend in NATIVE_BACKENDS

    @property
    def is_chat(self) -> bool:
        return self.backend not in COMPLETION_BACKENDS and not self.is_native

    @property
    def ratio(self) -> float:
        return 0.0 if self.random_range_ratio is None else self.random_range_ratio

    @property
    def ratio_style(self) -> RangeStyle:
        """SGLang's bench_serving and InferenceX's benchmark_serving.py draw lengths in
        [r·L, L]; vLLM's current bench serve in [L(1−r), L(1+r)]."""
        if self.range_ratio_style is not None:
            return self.range_ratio_style
        return "sglang" if self.backend in SGLANG_BACKENDS else "vllm"

    def length_range(self, target: int) -> tuple[int, int]:
        """The closed interval random lengths are drawn from for ``target`` (at least 1)."""
        r = self.ratio
        if self.ratio_style == "vllm":
            lo, hi = math.floor(target * (1 - r)), math.ceil(target * (1 + r))
        else:
            lo, hi = int(target * r), target
        return max(1, lo), max(1, hi)

    @property
    def url(self) -> str:
        if self.is_native:
            default = "/generate"
        else:
            default = "/v1/chat/completions" if self.is_chat else "/v1/completions"
        endpoint = self.endpoint or default
        endpoint = endpoint if endpoint.startswith("/") else "/" + endpoint
        # an endpoint of its own (/v1/...) or the native API hangs off the server root; one
        # without /v1 (--endpoint /completions) off the base URL as given
        base = self.root_url if endpoint.startswith("/v1/") or self.is_native else self._base
        return base + endpoint

    @property
    def _base(self) -> str:
        return (self.base_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def root_url(self) -> str:
        """The server root: --base-url without the /v1 that OpenAI clients' base URLs end in
        (http://host:8000/v1 is the same server as http://host:8000)."""
        return self._base.removesuffix("/v1")
