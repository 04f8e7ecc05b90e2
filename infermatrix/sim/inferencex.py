"""Published rows from InferenceX's own result records, for ``infermatrix sim validate
--inferencex FILE``.

InferenceX's dashboard serves its results as a JSON array of records, one per benchmarked
point: ``hardware`` ("h200", "mi355x"…), ``framework`` ("sglang", "vllm", "trt", or a
disaggregated one such as "dynamo-trt"), ``model`` ("dsr1"…), ``precision`` ("fp8", "fp4"),
``spec_method``, ``disagg``, ``decode_tp`` / ``decode_ep`` / ``decode_dp_attention``, ``isl``,
``osl``, ``conc``, ``image``, ``date``, ``run_url`` and ``metrics`` (``median_tpot`` and
``median_ttft`` in seconds, ``output_tput_per_gpu`` and ``tput_per_gpu`` in tokens a second a
GPU). Each single-node point becomes up to three report rows (median TPOT, output throughput a
GPU or, where a record has none, total throughput a GPU, and with ``ttft`` median TTFT), run
the way InferenceX ran it: ``benchmark_serving.py`` with ``--random-range-ratio 0.8``, ten
prompts per unit of concurrency. Points this simulator cannot stand for (disaggregated or
multi-node runs, engines it does not model, models or hardware outside the catalog) are
counted by reason and left out.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..catalog.yamlsrc import CatalogError, Problem
from ..jsonio import JsonNumberError, loads_bounded
from .names import BLACKWELL, engine_name
from .published import PublishedRow

MAX_BYTES = 64 << 20  # the dashboard's full export is a few MB

# InferenceX's short names for the catalog's models and hardware
MODELS = {"dsr1": "deepseek-r1-0528", "gptoss": "gpt-oss-120b", "gptoss120b": "gpt-oss-120b",
          "llama70b": "llama-3.3-70b-instruct"}
HARDWARE = {"h100": "H100", "h200": "H200", "h20": "H20", "b200": "B200", "b300": "B300",
            "gb200": "GB200", "gb300": "GB300", "mi300x": "MI300X", "mi325x": "MI325X",
            "mi355x": "MI355X"}
AMD = {"MI300X", "MI325X", "MI355X"}
RANGE_RATIO = 0.8  # InferenceX's --random-range-ratio: lengths uniform in [0.8 L, L]
PROMPTS_PER_CONCURRENCY = 10  # its --num-prompts is ten times --max-concurrency
_VERSION = re.compile(r":v?(\d+\.\d+(?:\.\d+)?[0-9a-z.]*?)(?:-|$)")


def _knobs(engine: str, hardware: str, conc: int, attention_dp: bool) -> dict[str, Any]:
    """The server settings InferenceX's launch scripts share per engine: no prefix caching
    (``--disable-radix-cache``, ``--no-enable-prefix-caching``; random prompts share nothing
    anyway), an FP8 KV cache where its scripts set one (SGLang on AMD and Blackwell,
    TensorRT-LLM everywhere), TensorRT-LLM's ``stream_interval: 10``, and the B200 and B300
    SGLang scripts' ``--scheduler-recv-interval``: 10 below concurrency 16, 30 from it, 1 under
    attention DP (``benchmarks/single_node/fixed_seq_len/dsr1_*_b200.sh``, ``*_b300.sh``)."""
    knobs: dict[str, Any] = {"prefix_caching": False}
    if engine == "trtllm":
        knobs.update(kv_dtype="fp8", stream_interval=10)
    elif engine == "sglang" and (hardware in AMD or hardware in BLACKWELL):
        knobs["kv_dtype"] = "fp8"
    if engine == "sglang" and hardware in ("B200", "B300") and not attention_dp:
        knobs["recv_interval"] = 30 if conc >= 16 else 10
    return knobs


def _precision(value: str, hardware: str, model: str) -> str:
    if value != "fp4":
        return value
    return "mxfp4" if hardware in AMD or model.startswith("gpt-oss") else "nvfp4"


def _skip_reason(rec: dict[str, Any]) -> str | None:
    if rec.get("disagg") or rec.get("is_multinode"):
        return "disaggregated or multi-node"
    if engine_name(str(rec.get("framework"))) is None:  # "trt"; not "dynamo-trt", "atom"
        return f"framework {rec.get('framework')!r}"
    if str(rec.get("model")) not in MODELS:
        return f"model {rec.get('model')!r}"
    if str(rec.get("hardware")) not in HARDWARE:
        return f"hardware {rec.get('hardware')!r}"
    return None


def _rows_of(rec: dict[str, Any], *, ttft: bool) -> list[PublishedRow]:
    hardware, model = HARDWARE[rec["hardware"]], MODELS[rec["model"]]
    engine = engine_name(rec["framework"])
    tp, ep = int(rec["decode_tp"]), int(rec.get("decode_ep") or 1)
    parallel: dict[str, Any] = {"tp": tp}
    if ep > 1:
        parallel["ep"] = ep
    dpa = bool(rec.get("decode_dp_attention"))
    if dpa:
        parallel.update(dp=tp, attention_dp=True)
    isl, osl, conc = int(rec["isl"]), int(rec["osl"]), int(rec["conc"])
    knobs = _knobs(engine, hardware, conc, dpa)
    spec = str(rec.get("spec_method") or "none")
    if spec != "none":  # InferenceX's MTP runs draft three tokens
        knobs.update(spec_method=spec, spec_draft_tokens=3)
    version = _VERSION.search(str(rec.get("image") or ""))
    mean = (1 + RANGE_RATIO) / 2  # the lengths' mean over their nominal value
    base: dict[str, Any] = {
        "split": "report", "source": rec.get("run_url") or "https://inferencex.semianalysis.com/",
        "note": f"InferenceX record of {rec.get('date', 'an unstated date')}", "hardware": hardware,
        "model": model, "engine": engine, "precision": _precision(str(rec["precision"]), hardware,
                                                                  model),
        "parallel": parallel, "knobs": knobs, "isl": round(isl * mean), "osl": round(osl * mean),
        "concurrency": conc, "requests": conc * PROMPTS_PER_CONCURRENCY, "range_ratio": RANGE_RATIO,
        "dataset": "random"}
    if version:
        base["engine_version"] = version.group(1)
    tag = (f"ifx-{rec['model']}-{rec['hardware']}-{rec['precision']}-{rec['framework']}-tp{tp}"
           f"ep{ep}{'dpa' if dpa else ''}"
           f"{'' if spec == 'none' else '-' + spec}-{isl}-{osl}-c{conc}-{rec.get('date', '')}")
    metrics = rec["metrics"]
    wanted = [("tpot", "median_tpot")]
    wanted.append(("out", "output_tput_per_gpu") if metrics.get("output_tput_per_gpu")
                  else ("tot", "tput_per_gpu"))
    if ttft:
        wanted.append(("ttft", "median_ttft"))
    return [PublishedRow.model_validate({**base, "id": f"{tag}-{kind}", "metric": key,
                                         "value": metrics[key]})
            for kind, key in wanted if metrics.get(key)]


def inferencex_rows(path: Path | str, *, ttft: bool = False) -> tuple[list[PublishedRow], Counter]:
    """Report rows for every single-node point of an InferenceX results export, and the
    points left out counted by reason. A file that is not such an export, or a record that
    lacks a field a row needs, is a CatalogError naming the file and the record."""
    where = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CatalogError([Problem(where, 0, "", f"cannot read: {exc.strerror}")]) from None
    if len(raw) > MAX_BYTES:
        raise CatalogError([Problem(where, 0, "", f"larger than {MAX_BYTES >> 20} MB")])
    try:
        data = loads_bounded(raw)
    except (ValueError, JsonNumberError) as exc:
        raise CatalogError([Problem(where, 0, "", f"not JSON: {exc}")]) from None
    if not isinstance(data, list):
        raise CatalogError([Problem(where, 0, "", "expected InferenceX's JSON array of records")])
    rows: list[PublishedRow] = []
    skipped: Counter = Counter()
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, rec in enumerate(data):
        if not isinstance(rec, dict) or not isinstance(rec.get("metrics"), dict):
            problems.append(Problem(where, 0, f"[{i}]", "expected a record with metrics"))
            continue
        reason = _skip_reason(rec)
        if reason:
            skipped[reason] += 1
            continue
        try:
            made = _rows_of(rec, ttft=ttft)
        except KeyError as exc:
            problems.append(Problem(where, 0, f"[{i}].{exc.args[0]}", "missing"))
            continue
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "record"
            problems.append(Problem(where, 0, f"[{i}]", f"{field}: {err['msg']}"))
            continue
        except (TypeError, ValueError) as exc:
            problems.append(Problem(where, 0, f"[{i}]", str(exc) or type(exc).__name__))
            continue
        for row in made:
            if row.id in seen:  # the same point measured twice on one day: keep the first
                skipped["a row repeated on the same day"] += 1
                continue
            seen.add(row.id)
            rows.append(row)
    if problems:
        raise CatalogError(problems)
    return rows, skipped
