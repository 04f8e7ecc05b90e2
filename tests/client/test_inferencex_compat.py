"""Result files of every dataset kind, made by `infermatrix bench` with InferenceX's own flag set,
go through InferenceX's post-processing as its workflow runs it (tests/client/imx_inferencex.py):
every ``*ms`` / ``*tpot*`` key converts, and the power step finds a valid measured window."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from imx_inferencex import (
    benchmark_window,
    power_reasons,
    process_result,
    workflow_env,
    write_gpu_metrics,
)

from infermatrix.client.cli import main

ISL, OSL, CONC = 24, 6, 2
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
)
TEMPLATE += "{% if add_generation_prompt %}<|assistant|>{% endif %}"


@pytest.fixture(scope="module")
def chat_tokenizer(hf_tokenizer_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test BPE tokenizer with a chat template, as a model directory carries one."""
    d = tmp_path_factory.mktemp("chat-tok")
    shutil.copy(hf_tokenizer_dir / "tokenizer.json", d / "tokenizer.json")
    config = {"chat_template": TEMPLATE, "bos_token": "<s>", "eos_token": "</s>"}
    (d / "tokenizer_config.json").write_text(json.dumps(config))
    return d


def inferencex_flags(base_url: str, tokenizer: Path, result_dir: Path, name: str) -> list[str]:
    """benchmark_lib.sh's run_benchmark_serving command line (with its optional flags)."""
    return [
        "--model", "fake-model", "--backend", "vllm", "--base-url", base_url,
        "--dataset-name", "random", "--random-input-len", str(ISL),
        "--random-output-len", str(OSL), "--random-range-ratio", "0.8",
        "--num-prompts", str(10 * CONC), "--max-concurrency", str(CONC), "--request-rate", "inf",
        "--ignore-eos", "--save-result", "--num-warmups", str(2 * CONC),
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--result-dir", str(result_dir),
        "--result-filename", f"{name}.json", "--use-chat-template", "--trust-remote-code",
        "--tokenizer", str(tokenizer), "--tokenizer-mode", "auto",
    ]  # fmt: skip


def with_dataset(flags: list[str], *extra: str) -> list[str]:
    i = flags.index("--dataset-name")
    return [*flags[:i], *flags[i + 2 :], *extra]


def datasets(tmp: Path) -> dict[str, list[str]]:
    """Extra flags per dataset kind (replacing --dataset-name random where they differ)."""
    sharegpt = tmp / "sharegpt.json"
    sharegpt.write_text(json.dumps([
        {"conversations": [{"from": "human", "value": f"question {i} " * 6},
                           {"from": "gpt", "value": "answer " * 8}]} for i in range(30)
    ]))  # fmt: skip
    trace = tmp / "trace.jsonl"
    trace.write_text("".join(
        json.dumps({"timestamp": 20 * i, "input_length": 40, "output_length": 5,
                    "hash_ids": [i % 3]}) + "\n" for i in range(12)
    ))  # fmt: skip
    return {
        "random": [],
        "random-goodput": ["--goodput", "ttft:5000", "tpot:1000", "e2el:20000"],
        "sharegpt": ["--dataset-name", "sharegpt", "--dataset-path", str(sharegpt)],
        "shared-prefix": ["--dataset-name", "shared-prefix", "--gsp-num-groups", "2",
                          "--gsp-prompts-per-group", "3", "--gsp-system-prompt-len", "16"],
        "trace": ["--dataset-name", "trace", "--dataset-path", str(trace),
                  "--trace-block-size", "8"],
        "multi-turn": ["--dataset-name", "multi-turn", "--backend", "openai-chat",
                       "--session-dist", "turns=3", "--session-dist", "user_tokens=10",
                       "--session-dist", "output_tokens=4", "--session-dist", "tool_delay_s=0.05",
                       "--session-dist", "system_prompt_tokens=20", "--session-duration", "1.0",
                       "--session-warmup", "0.2"],
    }  # fmt: skip


def bench(flags: list[str], kind: str, extra: list[str]) -> list[str]:
    if not extra or extra[0] != "--dataset-name":
        return flags + extra
    argv = with_dataset(flags, *extra)
    if kind == "multi-turn":  # closed-loop: no request rate, no warm-up requests, no templating
        for flag in ("--request-rate", "--num-warmups", "--backend"):
            i = argv.index(flag)
            del argv[i : i + 2]
        argv.remove("--use-chat-template")
        argv += ["--backend", "openai-chat"]
    return argv


KINDS = ["random", "random-goodput", "sharegpt", "shared-prefix", "trace", "multi-turn"]


@pytest.mark.parametrize("kind", KINDS)
def test_inferencex_post_processing_accepts_our_result(
    kind: str, serve: Any, chat_tokenizer: Path, tmp_path: Path
) -> None:
    srv = serve(ttft=0.01, tpot=0.002)
    name = f"h200_fp8_vllm_tp8_conc{CONC}_{kind}"
    extra = datasets(tmp_path)[kind]
    argv = bench(inferencex_flags(srv.base_url, chat_tokenizer, tmp_path, name), kind, extra)
    argv = _single_backend(argv)
    assert main(argv) == 0
    raw = json.loads((tmp_path / f"{name}.json").read_text())

    agg = process_result(workflow_env(name, ISL, OSL), tmp_path)  # raises where theirs does
    assert agg["conc"] == CONC and agg["model"] == "fake-model"
    assert agg["tput_per_gpu"] == pytest.approx(raw["total_token_throughput"] / 8)
    assert agg["median_ttft"] == pytest.approx(raw["median_ttft_ms"] / 1000)
    assert agg["median_intvty"] == pytest.approx(1000 / raw["median_tpot_ms"])
    ms_keys = [k for k in raw if k.endswith("ms") or "tpot" in k]
    assert all(isinstance(raw[k], int | float) for k in ms_keys), ms_keys
    assert "schedule_lag" in raw and "slot_wait" in raw  # structured extras, not *_ms keys
    if kind == "random-goodput":
        assert raw["goodput_slo"] == {"ttft_ms": 5000, "tpot_ms": 1000, "e2el_ms": 20000}
        assert raw["request_goodput"] is not None

    window, reasons = benchmark_window(raw)
    assert window is not None and reasons == [], reasons
    assert window[1] - window[0] == pytest.approx(raw["duration"], abs=1e-6)
    metrics = tmp_path / "gpu_metrics.csv"
    write_gpu_metrics(metrics, *window, gpus=8)
    assert power_reasons(metrics, window, gpus=8) == []


def _single_backend(argv: list[str]) -> list[str]:
    """The last --backend wins, as argparse would have it; keep only that one for clarity."""
    positions = [i for i, a in enumerate(argv) if a == "--backend"]
    for i in reversed(positions[:-1]):
        del argv[i : i + 2]
    return argv


def test_chat_template_counts_the_templated_tokens(
    serve: Any, chat_tokenizer: Path, tmp_path: Path
) -> None:
    """--use-chat-template: the prompt sent is the templated text and its length is counted on
    it, the template's tokens included in --random-input-len (InferenceX's fork)."""
    from infermatrix.client.chat_template import chat_prompt
    from infermatrix.client.tokenizer import load_tokenizer

    srv = serve()
    flags = inferencex_flags(srv.base_url, chat_tokenizer, tmp_path, "tmpl")
    flags[flags.index("--random-range-ratio") + 1] = "0"
    assert main([*flags, "--save-detailed"]) == 0
    raw = json.loads((tmp_path / "tmpl.json").read_text())
    tok = load_tokenizer(str(chat_tokenizer))
    overhead = tok.count(chat_prompt(tok, "a")) - 1
    assert overhead > 2
    assert raw["input_lens"] == [ISL] * (10 * CONC)  # exact: template tokens + random part
    sent = [b["prompt"] for b in srv.requests[-10 * CONC :]]
    assert all(p.startswith("<s><|user|>") and p.endswith("<|assistant|>") for p in sent)
    assert all(tok.count(p) == ISL for p in sent)
