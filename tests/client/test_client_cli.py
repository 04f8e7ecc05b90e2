"""The CLI: bench_serving-compatible flags, and bad input → one line on stderr, exit 2."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infermatrix.client.cli import build_parser, config_from_args
from infermatrix.client.cli import main as cli_main


def main(argv: list[str]) -> int:
    """The CLI against servers that count one word as one token (the fake and simulated
    servers): the word tokenizer unless a test names another."""
    return cli_main(argv if "--tokenizer" in argv else [*argv, "--tokenizer", "words"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    return err


INFERENCEMAX_CALL = [
    "--model",
    "fake-model",
    "--backend",
    "vllm",
    "--base-url",
    "http://0.0.0.0:8888",
    "--dataset-name",
    "random",
    "--random-input-len",
    "1024",
    "--random-output-len",
    "1024",
    "--random-range-ratio",
    "0.8",
    "--num-prompts",
    "40",
    "--max-concurrency",
    "4",
    "--request-rate",
    "inf",
    "--ignore-eos",
    "--save-result",
    "--percentile-metrics",
    "ttft,tpot,itl,e2el",
]


def test_inferencemax_call_parses() -> None:
    cfg = config_from_args(build_parser().parse_args(INFERENCEMAX_CALL))
    assert cfg.random_range_ratio == 0.8 and cfg.ignore_eos and cfg.save_result
    assert cfg.max_concurrency == 4 and cfg.num_prompts == 40
    assert cfg.request_rate == float("inf")
    assert cfg.percentile_metrics == ["ttft", "tpot", "itl", "e2el"]
    assert cfg.url == "http://0.0.0.0:8888/v1/completions"


def test_other_flags_parse() -> None:
    cfg = config_from_args(
        build_parser().parse_args(
            [
                "--host",
                "10.0.0.1",
                "--port",
                "30000",
                "--backend",
                "openai-chat",
                "--goodput",
                "ttft:500",
                "tpot:50",
                "--metadata",
                "gpu=h200",
                "tp=8",
                "--metric-percentiles",
                "50,90,99.9",
                "--burstiness",
                "0.5",
                "--request-rate",
                "12.5",
                "--idle-timeout",
                "30",
                "--header",
                "X-Session-ID=abc",
                "--extra-body",
                '{"top_p": 0.9}',
                "--gsp-num-groups",
                "3",
                "--gsp-system-prompt-len",
                "100",
            ]
        )
    )
    assert cfg.url == "http://10.0.0.1:30000/v1/chat/completions"
    assert cfg.goodput == {"ttft": 500, "tpot": 50}
    assert cfg.metadata == {"gpu": "h200", "tp": "8"}
    assert cfg.metric_percentiles == [50, 90, 99.9]
    assert cfg.timeouts.idle == 30 and cfg.headers == {"X-Session-ID": "abc"}
    assert cfg.shared_prefix_groups == 3 and cfg.shared_prefix_len == 100


def test_range_ratio_semantics_in_help() -> None:
    assert "[r*L, L]" in build_parser().format_help()


@pytest.mark.parametrize(
    "argv",
    [
        ["--random-range-ratio", "2"],
        ["--goodput", "ttft"],
        ["--goodput", "bogus:3"],
        ["--metadata", "novalue"],
        ["--percentile-metrics", "ttft,nope"],
        ["--metric-percentiles", "abc"],
        ["--request-rate", "abc"],
        ["--request-rate", "0"],
        ["--extra-body", "{not json"],
        ["--dataset-name", "sharegpt"],
        ["--idle-timeout", "100", "--request-timeout", "10"],
        ["--no-such-flag"],
    ],
)
def test_bad_flags_exit_2_with_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        code = main(argv)
        raise SystemExit(code)
    assert e.value.code == 2
    one_error_line(capsys)


def test_unreachable_server(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "--base-url",
            f"http://127.0.0.1:{free_port()}",
            "--num-prompts",
            "2",
            "--random-input-len",
            "4",
            "--random-output-len",
            "4",
        ]
    )
    assert code == 2
    assert "cannot reach server" in one_error_line(capsys)


def test_wrong_model_name(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    srv = serve()
    code = main(["--base-url", srv.base_url, "--model", "nope", "--num-prompts", "2"])
    assert code == 2
    assert "'nope' is not served" in one_error_line(capsys)


def test_wrong_model_name_without_models_endpoint(
    serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = serve(models_endpoint=False)
    code = main(
        [
            "--base-url",
            srv.base_url,
            "--model",
            "nope",
            "--num-prompts",
            "2",
            "--random-input-len",
            "4",
        ]
    )
    assert code == 2
    line = one_error_line(capsys)
    assert "http_404" in line and "does not exist" in line


def test_wrong_endpoint(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    srv = serve()
    code = main(["--base-url", srv.base_url, "--endpoint", "/v1/nope", "--num-prompts", "2"])
    assert code == 2
    assert "http_404" in one_error_line(capsys)


@pytest.mark.parametrize("kind", ["empty_dir", "corrupt", "hub_id"])
def test_tokenizer_that_cannot_load(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if kind == "empty_dir":
        spec = str(tmp_path)
    elif kind == "corrupt":
        (tmp_path / "tokenizer.json").write_text("{not a tokenizer")
        spec = str(tmp_path)
    else:
        spec = "no-such-org/no-such-model-xyz"
    code = main(["--base-url", f"http://127.0.0.1:{free_port()}", "--tokenizer", spec])
    assert code == 2
    assert "cannot load tokenizer" in one_error_line(capsys)


@pytest.mark.parametrize(
    "name,content",
    [
        ("sharegpt", None),
        ("sharegpt", "{broken"),
        ("trace", '{"timestamp": 0}\n'),
        ("trace", "nope\n"),
    ],
)
def test_unreadable_dataset(
    name: str, content: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "data.json"
    if content is not None:
        path.write_text(content)
    code = main(
        [
            "--base-url",
            f"http://127.0.0.1:{free_port()}",
            "--dataset-name",
            name,
            "--dataset-path",
            str(path),
        ]
    )
    assert code == 2
    line = one_error_line(capsys)
    assert str(path) in line


SIM_SCALE = 10.0  # the simulated engine runs 10× faster than real time
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agentic"


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    """`infermatrix sim serve` (Llama 3.1 70B FP8, H200 TP4) on a loopback port, a subprocess."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "infermatrix.cli",
            "sim",
            "serve",
            "--hardware",
            "H200",
            "--model",
            "llama-3.1-70b-instruct",
            "--precision",
            "fp8",
            "--tp",
            "4",
            "--port",
            str(port),
            "--time-scale",
            str(SIM_SCALE),
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"sim exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.parametrize(
    "argv,msg",
    [
        (
            ["--session-dist", "turns=zipf:a=2"],
            "--session-dist: turns: a zipf distribution needs high",
        ),
        (["--session-dist", "turns"], "--session-dist: expected NAME=VALUE"),
        (["--session-dist", "colour=3"], "colour"),
        (["--session-duration", "0"], "--session-duration: Input should be greater than 0"),
        (["--session-time-scale", "-2"], "--session-time-scale: Input should be greater than 0"),
        (["--session-affinity", "bogus"], "--session-affinity: unknown session affinity 'bogus'"),
        (["--session-source", "trace"], "--session-source trace needs --dataset-path"),
        (["--session-source", "synthetic", "--dataset-path", "x.json"], "read no --dataset-path"),
        (["--dataset-path", "t.jsonl", "--session-dist", "turns=3"], "not mooncake"),
        (["--request-rate", "4"], "--request-rate does not apply to multi-turn"),
        (["--num-workers", "2"], "--num-workers does not apply"),
        (["--num-warmups", "2"], "use --session-warmup"),
        (["--session-output", "sloppy"], "invalid choice"),
    ],
)
def test_bad_session_flags_exit_2_with_one_line(
    argv: list[str], msg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--base-url", f"http://127.0.0.1:{free_port()}", "--dataset-name", "multi-turn"]
    with pytest.raises(SystemExit) as e:
        raise SystemExit(main(base + argv))
    assert e.value.code == 2
    assert msg in one_error_line(capsys)


def test_session_flags_need_multi_turn(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--session-duration", "5"]) == 2
    assert "session settings need --dataset-name multi-turn" in one_error_line(capsys)


def test_missing_trace_manifest_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "manifest.json"
    code = main(
        [
            "--base-url",
            f"http://127.0.0.1:{free_port()}",
            "--dataset-name",
            "multi-turn",
            "--dataset-path",
            str(path),
        ]
    )
    assert code == 2
    assert str(path) in one_error_line(capsys)


def test_multi_turn_bad_flag_real_process() -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "infermatrix.cli",
            "bench",
            "--dataset-name",
            "multi-turn",
            "--session-dist",
            "turns=lognormal:sigma=1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert "a lognormal distribution needs median" in p.stderr


def test_multi_turn_synthetic_sessions_on_the_simulated_engine(
    sim_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "--backend",
            "openai-chat",
            "--base-url",
            sim_url,
            "--dataset-name",
            "multi-turn",
            "--max-concurrency",
            "3",
            "--session-dist",
            "turns=4",
            "--session-dist",
            "system_prompt_tokens=300",
            "--session-dist",
            "user_tokens=40",
            "--session-dist",
            "output_tokens=12",
            "--session-dist",
            "tool_delay_s=0.5",
            "--session-dist",
            "sessions=6",
            "--session-duration",
            "1.5",
            "--session-time-scale",
            str(SIM_SCALE),
            "--session-affinity",
            "x-session-id",
            "--no-mid-session",
            "--save-detailed",
            "--save-result",
            "--result-dir",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Serving Benchmark Result" in out and "Agentic sessions" in out
    assert "P25 / median output speed (tok/s):" in out and "Cached token ratio:" in out
    (path,) = tmp_path.glob("*.json")
    assert path.name.startswith("openai-chat-infqps-concurrency3-")
    r = json.loads(path.read_text())
    a = r["agentic"]
    assert r["dataset_name"] == "multi-turn" and r["failed"] == 0
    assert r["completed"] == a["completed"] == len(a["turns"]) > 6
    assert r["settings"]["sessions"]["synthetic"][0] == "turns=4"
    assert a["agents"] == 3 and a["affinity"] == "header X-Session-ID"
    assert a["p25_output_speed"] > 0 and a["p95_ttft_ms"] > 0
    assert a["exact_output_len"] == a["completed"]  # ignore_eos + max_tokens: exact lengths
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for t in a["turns"]:
        by_conv.setdefault(t["conversation_id"], []).append(t)
    grown = 0
    for turns in by_conv.values():
        turns.sort(key=lambda t: t["turn"])
        assert turns[0]["turn"] == 0  # --no-mid-session: every conversation starts at turn 0
        for prev, cur in zip(turns, turns[1:], strict=False):
            # the whole conversation so far: previous input + its answer + the new user turn
            assert cur["input_tokens"] == prev["input_tokens"] + 12 + 40
            assert cur["input_tokens_server"] == cur["input_tokens"]
            # the conversation so far is in the prefix cache
            assert cur["cached_tokens"] >= prev["input_tokens"] // 2
            grown += 1
    assert grown >= 3
    assert a["cached_token_ratio"] > 0.5


def test_multi_turn_replays_a_trace_manifest(
    sim_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "trace.json"
    code = main(
        [
            "--backend",
            "openai-chat",
            "--base-url",
            sim_url,
            "--dataset-name",
            "multi-turn",
            "--dataset-path",
            str(EXAMPLES / "manifest.json"),
            "--max-concurrency",
            "4",
            "--session-replay-once",
            "--session-time-scale",
            str(SIM_SCALE),
            "--save-detailed",
            "--result-filename",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    a = json.loads(out.read_text())["agentic"]
    recorded = sum(1 for f in (EXAMPLES / "tasks").glob("*.jsonl") for _ in f.open())
    assert a["source"].startswith("trace(")
    assert len(a["turns"]) == a["completed"] == a["exact_output_len"] == recorded
    assert all(t["cached_tokens"] > 0 for t in a["turns"] if t["turn"] > 0)


def test_end_to_end_writes_result(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = serve(ttft=0.01)
    code = main(
        [
            "--base-url",
            srv.base_url,
            "--num-prompts",
            "6",
            "--max-concurrency",
            "2",
            "--random-input-len",
            "10",
            "--random-output-len",
            "5",
            "--save-result",
            "--result-dir",
            str(tmp_path),
            "--metadata",
            "gpu=fake",
            "--disable-tqdm",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "Serving Benchmark Result" in out and "Median TTFT (ms)" in out
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and files[0].name.startswith("vllm-infqps-concurrency2-fake-model-")
    r = json.loads(files[0].read_text())
    assert r["completed"] == 6 and r["gpu"] == "fake" and r["request_rate"] == "inf"


def test_error_rate_over_threshold_exits_1(
    serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    srv = serve(fail_every=2)
    out = tmp_path / "r.json"
    code = main(
        [
            "--base-url",
            srv.base_url,
            "--num-prompts",
            "4",
            "--random-input-len",
            "4",
            "--random-output-len",
            "2",
            "--result-filename",
            str(out),
        ]
    )
    assert code == 1
    assert json.loads(out.read_text())["passed"] is False


def test_python_dash_m_unreachable_is_one_line() -> None:
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "infermatrix.client",
            "--base-url",
            f"http://127.0.0.1:{free_port()}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
