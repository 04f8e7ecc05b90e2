"""The flags and defaults of the tools we imitate (vLLM bench serve, SGLang bench_serving,
InferenceX's benchmark_serving.py), each doing what it does there, over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infermatrix.client.cli import build_parser, config_from_args, main
from infermatrix.client.tokenizer import WORDS_WARNING


def run(*argv: str) -> int:
    return main(list(argv))


def small(srv: Any, *extra: str) -> list[str]:
    return ["--base-url", srv.base_url, "--model", "fake-model", "--num-prompts", "4",
            "--random-input-len", "12", "--random-output-len", "5", "--max-concurrency", "2",
            "--disable-tqdm", *extra]  # fmt: skip


def test_several_headers_per_flag(serve: Any) -> None:
    srv = serve()
    argv = small(srv, "--tokenizer", "words", "--header", "x-a=1", "x-b=2", "--header", "x-c=3")
    assert run(*argv) == 0
    sent = srv.request_headers[-1]
    assert (sent["x-a"], sent["x-b"], sent["x-c"]) == ("1", "2", "3")


def test_sglang_aliases_and_output_file(serve: Any, tmp_path: Path) -> None:
    """--extra-request-body, --warmup-requests and --output-file (JSON Lines, appended)."""
    srv = serve()
    out = tmp_path / "runs.jsonl"
    argv = small(srv, "--tokenizer", "words", "--extra-request-body", '{"top_k": 7}',
                 "--warmup-requests", "3", "--output-file", str(out))  # fmt: skip
    assert run(*argv) == 0 and run(*argv) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["completed"] == 4 for line in lines)
    assert all(b["top_k"] == 7 for b in srv.requests)
    assert len(srv.requests) == 2 * (1 + 3 + 4)  # probe + 3 warm-ups + 4 measured, twice
    assert json.loads(lines[0])["num_warmups"] == 3


def test_profile_brackets_the_measured_run(serve: Any) -> None:
    srv = serve()
    assert run(*small(srv, "--tokenizer", "words", "--profile", "--num-warmups", "2")) == 0
    assert srv.profile_calls == ["start", "stop"]


def test_word_counter_only_on_request_with_a_warning(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = serve()
    argv = small(srv, "--tokenizer", "words", "--result-filename", str(tmp_path / "r.json"))
    assert run(*argv) == 0
    assert f"warning: {WORDS_WARNING}" in capsys.readouterr().err
    result = json.loads((tmp_path / "r.json").read_text())
    assert WORDS_WARNING in result["notes"] and result["tokenizer_id"] == "words"


def test_tokenizer_defaults_to_the_model(
    serve: Any, hf_tokenizer_dir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No --tokenizer: --model (a local model directory) is the tokenizer, as in vLLM/SGLang."""
    srv = serve(models=(str(hf_tokenizer_dir),))
    argv = ["--base-url", srv.base_url, "--model", str(hf_tokenizer_dir), "--num-prompts", "3",
            "--random-input-len", "20", "--random-output-len", "4", "--save-detailed",
            "--result-filename", str(tmp_path / "r.json")]  # fmt: skip
    assert run(*argv) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["tokenizer_id"] == str(hf_tokenizer_dir)
    assert WORDS_WARNING not in result.get("notes", [])
    assert result["input_lens"] == [20, 20, 20]
    # a model name that is no tokenizer: one line naming both ways out, exit 2
    srv2 = serve()
    assert run("--base-url", srv2.base_url, "--model", "fake-model") == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "defaults to the model" in err and "--tokenizer words" in err


def test_served_model_name_apart_from_the_tokenizers_model(
    serve: Any, hf_tokenizer_dir: Path, tmp_path: Path
) -> None:
    srv = serve()
    argv = ["--base-url", srv.base_url, "--model", str(hf_tokenizer_dir), "--served-model-name",
            "fake-model", "--num-prompts", "2", "--random-input-len", "9",
            "--result-filename", str(tmp_path / "r.json")]  # fmt: skip
    assert run(*argv) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert {b["model"] for b in srv.requests} == {"fake-model"}
    assert result["tokenizer_id"] == result["model_id"] == str(hf_tokenizer_dir)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dsv4"], "--dsv4 requires --use-chat-template"),
        (["--random-range-ratio", "1"], "must be < 1 with vLLM"),
        (["--tokenizer-mode", "mistral"], "tokenizer mode 'mistral' is not supported"),
        (["--ignore-eos", "--disable-ignore-eos"], "contradict"),
    ],
)
def test_bad_combinations_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run("--base-url", "http://127.0.0.1:9", "--tokenizer", "words", *argv)
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err


def test_sglang_backends_follow_sglangs_defaults() -> None:
    def cfg(*argv: str) -> Any:
        return config_from_args(build_parser().parse_args(list(argv)))

    native = cfg("--backend", "sglang")
    assert native.url.endswith("/generate") and native.ignore_eos  # SGLang ignores EOS
    assert native.length_range(100) == (1, 100)  # its r = 0 draws [1, L]
    assert not cfg("--backend", "sglang", "--disable-ignore-eos").ignore_eos
    assert cfg("--backend", "sglang-oai").url.endswith("/v1/completions")
    assert cfg("--backend", "sglang-oai-chat").url.endswith("/v1/chat/completions")
    assert cfg("--backend", "vllm-chat").url.endswith("/v1/chat/completions")
    assert not cfg("--backend", "vllm").ignore_eos
    fork = cfg("--backend", "vllm", "--range-ratio-style", "sglang", "--random-range-ratio", "0.8")
    assert fork.length_range(1000) == (800, 1000)  # InferenceX's benchmark_serving.py
    assert cfg("--input-len", "7", "--output-len", "3").random_input_len == 7


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    from infermatrix.catalog.loader import load_catalog
    from infermatrix.sim.config import SimConfig
    from infermatrix.sim.server import ServerOptions, ServerThread

    config = SimConfig.from_parts(
        load_catalog(), "H200", "llama-3.1-70b-instruct", "fp8", served_model_name="sim-model"
    )
    srv = ServerThread(config, ServerOptions(time_scale=20.0)).start()
    yield srv.base_url
    srv.stop()


def test_sglang_native_backend_against_generate(sim: str, tmp_path: Path) -> None:
    """--backend sglang speaks /generate: cumulative text in, deltas and SGLang's token counts
    out; the same run through /v1/completions measures the same tokens."""
    results = {}
    for backend in ("sglang", "sglang-oai"):
        path = tmp_path / f"{backend}.json"
        argv = ["--backend", backend, "--base-url", sim, "--tokenizer", "words",
                "--num-prompts", "6", "--max-concurrency", "3", "--random-input-len", "64",
                "--random-output-len", "24", "--random-range-ratio", "1", "--save-detailed",
                "--result-filename", str(path)]  # fmt: skip
        assert run(*argv) == 0
        results[backend] = json.loads(path.read_text())
    native = results["sglang"]
    assert native["failed"] == 0 and native["completed"] == 6
    assert native["output_lens"] == [24] * 6  # ignore_eos by default, max_new_tokens
    assert native["output_token_mismatch"] == 0  # the deltas re-tokenize to meta_info's counts
    assert native["total_input_tokens"] == native["total_input_tokens_server"] == 6 * 64
    assert native["total_output_tokens"] == results["sglang-oai"]["total_output_tokens"]
    texts = native["generated_texts"]
    assert all(len(t.split()) == 24 for t in texts)  # not the cumulative texts concatenated
