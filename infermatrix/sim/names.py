"""Names a published table gives, resolved to the catalog's: hardware, models, precisions and
engines as vendors' pages and benchmark reports spell them.

A table written from someone else's page says "NVIDIA H200 SXM 141GB", "AMD Instinct MI300X",
"nvidia/DeepSeek-R1-0528-FP4", "amd/Llama-3.1-70B-Instruct-FP8-KV", "TensorRT-LLM" or
"FP8". Each is reduced to a key that drops what does not change the simulation (vendor words,
the SXM/HGX form factor, the memory size a part comes in only one of, a checkpoint's
quantisation or date suffix, an organisation prefix) and compared with the keys of the catalog
entries. A key that fits no entry, or several, resolves to nothing: the caller reports it.
Products that do differ keep their words (H100 PCIe, H100 NVL) and so match nothing here.
"""

from __future__ import annotations

import re
from typing import Any

# the catalog's boards of NVIDIA's SM100 (Blackwell) family: engines pick kernels and launch
# defaults by it (inferencex.py's SGLang flags, flashmla_sparse.py's head padding)
BLACKWELL = frozenset({"B200", "B300", "GB200", "GB300"})

_SPLIT = re.compile(r"[\s_/()+,-]+")

# words that name the maker or the board, not the accelerator
_HARDWARE_NOISE = frozenset({"nvidia", "amd", "instinct", "huawei", "ascend", "sxm", "sxm5",
                             "sxm4", "hgx", "dgx", "gpu", "gpus", "die"})
_MEMORY = re.compile(r"\d+(gb|g)$")  # "80GB", "141G"
_COUNT = re.compile(r"\d+x$|x\d+$")  # "8x", "x8"

# checkpoint suffixes: a quantised or re-dated release of the same architecture
_MODEL_NOISE = frozenset({"fp8", "fp4", "nvfp4", "mxfp4", "kv", "dynamic", "static", "block",
                          "w8a8", "w4a16", "w4a8", "int8", "int4", "awq", "gptq", "bf16",
                          "fp16", "quark", "modelopt", "instruct", "chat", "hf"})
_DATE = re.compile(r"\d{4}$")  # DeepSeek's "0528", Qwen's "2507"

PRECISION_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "fp8e4m3": "fp8",
                     "e4m3": "fp8", "int8": "w8a8-int8", "w8a8": "w8a8-int8",
                     "w8a8int8": "w8a8-int8"}
ENGINE_ALIASES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm",
                  "tensorrtllm": "trtllm", "tensorrt": "trtllm", "trt": "trtllm"}


def hardware_key(text: str) -> str:
    words = [w for w in _SPLIT.split(text.casefold()) if w]
    kept = [w for w in words if w not in _HARDWARE_NOISE and not _MEMORY.fullmatch(w)
            and not _COUNT.fullmatch(w)]
    return "".join(kept)


def model_key(text: str) -> str:
    base = text.casefold().rsplit("/", 1)[-1]  # drop "meta-llama/", "nvidia/"
    words = [w for w in _SPLIT.split(base) if w]
    kept = [w for w in words if w not in _MODEL_NOISE and not _DATE.fullmatch(w)]
    return "".join(kept)


def _names_of(name: str, item: Any) -> list[str]:
    display = str(getattr(item, "display_name", "") or "")
    names = [name, display, str(getattr(item, "hf_id", "") or "")]
    names += re.findall(r"\(([^)]*)\)", display)  # "Ascend 910C die (Atlas 800I A3)"
    return [n for n in names if n]


def resolve(table: dict[str, Any], value: str, kind: str) -> str | None:
    """The catalog name of the one ``kind`` ("hardware" or "model") entry ``value`` names:
    exactly, in another case, by display name or Hugging Face id, or by the key above. None
    when none or several entries fit."""
    if value in table:
        return value
    folded = value.casefold()
    hits = {name for name, item in table.items()
            if folded in {n.casefold() for n in _names_of(name, item)}}
    if not hits:
        key_of = hardware_key if kind == "hardware" else model_key
        key = key_of(value)
        hits = {name for name, item in table.items()
                if key and key in {key_of(n) for n in _names_of(name, item)}}
    return hits.pop() if len(hits) == 1 else None


def precision_name(value: str, known: dict[str, Any]) -> str | None:
    """The catalog precision ``value`` names ("FP8", "BF16", "W8A8"), or None."""
    folded = value.casefold().strip()
    if folded in known:
        return folded
    alias = PRECISION_ALIASES.get(folded.replace("-", "").replace("_", ""))
    return alias if alias in known else None


def engine_name(value: str) -> str | None:
    """The engine ``value`` names ("TensorRT-LLM", "SGLang", "vLLM"), or None."""
    return ENGINE_ALIASES.get(re.sub(r"[\s_.-]+", "", value.casefold()))


# metrics as benchmark clients and dashboards name them (vLLM/SGLang bench_serving result
# keys, InferenceX's fields): the table's metric, and the statistic a prefix implies
METRIC_ALIASES = {"tpot": "tpot_ms", "ttft": "ttft_ms", "e2el": "e2e_latency_ms",
                  "e2el_ms": "e2e_latency_ms", "e2e_latency": "e2e_latency_ms",
                  "interactivity": "output_tps_per_user", "tps_per_user": "output_tps_per_user",
                  "intvty": "output_tps_per_user",
                  "output_tput_per_gpu": "output_tps_per_gpu",
                  "output_throughput_per_gpu": "output_tps_per_gpu",
                  "tput_per_gpu": "total_tps_per_gpu",
                  "total_tput_per_gpu": "total_tps_per_gpu",
                  "total_throughput_per_gpu": "total_tps_per_gpu",
                  "output_throughput": "output_tps", "itl": "itl_ms"}
# a client's key prefix -> the table's statistic
STATISTIC_PREFIXES = {"median_": "median", "mean_": "mean", "p50_": "median", "p90_": "p90",
                      "p95_": "p95", "p99_": "p99"}
# InferenceX's agg files drop "_ms" from bench_serving's latency keys and divide by 1000
# ("median_tpot": seconds); a latency named without "_ms" is read in seconds the same way
_IN_SECONDS = frozenset({"tpot", "ttft", "e2el", "e2e_latency", "itl"})


def metric_name(value: str, known: tuple[str, ...]) -> tuple[str, str | None, float] | None:
    """(table metric, statistic or None, factor to the table's unit) for a metric as a client
    names it: "median_tpot_ms", "mean_ttft_ms", "p50_e2el_ms", "p99_ttft_ms", "output_tput_per_gpu",
    "interactivity", and InferenceX's "tput_per_gpu", "median_intvty" and "median_tpot" (in
    seconds: factor 1000); None if unknown."""
    name = value.casefold().strip()
    statistic = None
    for prefix, stat in STATISTIC_PREFIXES.items():
        if name.startswith(prefix):
            name, statistic = name[len(prefix):], stat
            break
    factor = 1000.0 if name in _IN_SECONDS else 1.0
    name = METRIC_ALIASES.get(name, name)
    return (name, statistic, factor) if name in known else None


# a parallelism as pages write it: "TP8", "TP=4 DP=2 EP=4", "TP8 + EP8", "DEP16" (TensorRT-LLM:
# attention DP and EP over n GPUs), "TEP8" (tensor and expert parallel), "attention-DP"
_DEGREE = re.compile(r"(dep|tep|tp|pp|dp|ep|cp)\s*=?\s*(\d+)", re.IGNORECASE)
# "attention-DP", "DP attention", "DP8 attention", "ADP": the words go, a DP degree stays
_ATTENTION_DP = re.compile(r"attention(?:[\s_-]*dp\b)?|\badp\b|\bdp(?=[\s_-]*attention)",
                           re.IGNORECASE)


def parallel_spec(text: str) -> dict[str, Any] | None:
    """The catalog's ``parallel`` fields for a parallelism written as a page writes it; None
    when the text holds anything else (so a typo is refused, not read as TP1)."""
    spec: dict[str, Any] = {}
    rest = _ATTENTION_DP.sub(" ", text)
    if rest != text:
        spec["attention_dp"] = True
    for kind, n in _DEGREE.findall(rest):
        degree, kind = int(n), kind.casefold()
        if kind in ("dep", "tep"):  # n GPUs: tensor-split layers, experts over all n
            spec.update(tp=degree, ep=degree)
            if kind == "dep":
                spec.update(attention_dp=True, dp=degree)
        else:
            spec[kind] = degree
    leftover = _SPLIT.sub("", _DEGREE.sub("", rest))
    return spec if _DEGREE.search(rest) and not leftover else None
