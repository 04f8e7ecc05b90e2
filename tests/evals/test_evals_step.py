"""The eval step with a stand-in harness: every outcome writes a record, only a parsed score is ok."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from imx_evals_data import LOCAL_PASS, fake_harness_python

from infermatrix.catalog.accuracy import EvalTask
from infermatrix.evals.harness import (
    Harness,
    HarnessMissing,
    find_harness,
    lm_eval_argv,
    run_harness,
)
from infermatrix.evals.record import read_eval_file
from infermatrix.evals.step import EvalServer, run_eval

TASK = EvalTask(lm_eval_task="imx_local_math", metric="exact_match,flexible-extract", num_fewshot=0,
                limit=10, include_path="tasks", timeout_minutes=1)
IDENTITY = {"kind": "level-result", "run_id": "r1", "job_id": "j1", "recipe": "m/h-e-p",
            "model": "tiny-llama", "hardware": "H200", "engine": "vllm", "engine_version": "0.1",
            "image": "img", "precision": "fp8", "workload": "w", "runner": "local",
            "simulated": True, "git_sha": "abc", "fingerprint": "f"}
TARGET = EvalServer("http://127.0.0.1:9/", "org/model", "completions")


def test_command_line(tmp_path: Path) -> None:
    h = Harness(Path("/venv/bin/python"))
    argv = lm_eval_argv(h, TASK, base_url="http://127.0.0.1:9/", served_model="org/model",
                        endpoint="completions", concurrency=16, output_path=tmp_path,
                        include_path=tmp_path / "tasks")
    assert argv[:7] == ["/venv/bin/python", "-m", "lm_eval", "run", "--model", "local-completions",
                        "--model_args"]
    margs = dict(kv.split("=", 1) for kv in argv[7].split(","))
    assert margs["base_url"] == "http://127.0.0.1:9/v1/completions"
    assert margs["num_concurrent"] == "16" and margs["tokenizer_backend"] == "none"
    assert margs["model"] == "org/model"
    tail = argv[8:]
    for flag, value in (("--tasks", "imx_local_math"), ("--num_fewshot", "0"), ("--limit", "10"),
                        ("--include_path", str(tmp_path / "tasks")), ("--output_path", str(tmp_path))):
        assert tail[tail.index(flag) + 1] == value
    chat = lm_eval_argv(h, TASK.model_copy(update={"concurrency": 4}), base_url="http://h:1",
                        served_model="m", endpoint="chat", concurrency=16, output_path=tmp_path)
    assert "local-chat-completions" in chat and "--apply_chat_template" in chat
    assert "base_url=http://h:1/v1/chat/completions" in chat[7] and "num_concurrent=4" in chat[7]
    with pytest.raises(ValueError, match="comma"):
        lm_eval_argv(h, TASK, base_url="http://h:1", served_model="a,b", endpoint="chat",
                     concurrency=1, output_path=tmp_path)


def test_missing_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(HarnessMissing, match="setup-lm-eval.sh"):
        find_harness(tmp_path / "nope")
    monkeypatch.setenv("INFERMATRIX_EVAL_VENV", str(tmp_path / "nope2"))
    with pytest.raises(HarnessMissing, match="nope2"):
        find_harness()
    (tmp_path / "v" / "bin").mkdir(parents=True)
    (tmp_path / "v" / "bin" / "python").symlink_to("/bin/false")
    with pytest.raises(HarnessMissing, match="does not import"):
        find_harness(tmp_path / "v")


def test_timeout_kills_the_harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMX_FAKE_MODE", "hang")
    exe = fake_harness_python(tmp_path / "bin")
    run = run_harness([str(exe), "--output_path", str(tmp_path)], tmp_path / "x.log", 0.5, tmp_path)
    assert run.returncode is None and not run.ok
    assert "fake lm-eval" in (tmp_path / "x.log").read_text()


@pytest.mark.parametrize(("mode", "status", "reason"), [
    ("ok", "ok", None),
    ("crash", "failed", "lm-eval exited with code 3: Traceback: boom"),
    ("garbage", "failed", "unreadable results JSON"),
    ("nothing", "failed", "lm-eval wrote no results file"),
])
def test_outcomes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, status: str,
                  reason: str | None) -> None:
    monkeypatch.setenv("IMX_FAKE_MODE", mode)
    monkeypatch.setenv("IMX_FAKE_RESULTS", str(LOCAL_PASS))
    harness = Harness(fake_harness_python(tmp_path / "bin"))
    job_dir = tmp_path / "job"
    lines: list[str] = []
    rec = run_eval("local_math", TASK, target=TARGET, identity=IDENTITY, concurrency=8,
                   job_dir=job_dir, catalog_root=tmp_path, threshold=0.8, harness=harness,
                   log=lines.append)
    assert rec.status == status
    written = read_eval_file(job_dir / "eval-local_math-c8.json")
    assert written.model_dump() == rec.model_dump()
    doc = json.loads((job_dir / "eval-local_math-c8.json").read_text())
    assert doc["kind"] == "eval-result" and doc["recipe"] == "m/h-e-p" and doc["concurrency"] == 8
    assert "--include_path" in doc["command"] and str(tmp_path / "tasks") in doc["command"]
    assert (job_dir / "eval-local_math-c8.log").read_text().startswith("$ ")
    assert sorted(p.name for p in job_dir.iterdir()) == ["eval-local_math-c8.json", "eval-local_math-c8.log"]
    if status == "ok":
        assert (rec.score, rec.n_samples, rec.task_version) == (0.9, 10, "2.0")
        assert rec.stderr == pytest.approx(0.1)
        assert doc["lm_eval"]["results"]["imx_local_math"]["exact_match,flexible-extract"] == 0.9
        assert lines == ["  eval local_math after c=8: 0.900 [pass]"]
    else:
        assert rec.score is None and reason in (rec.error or "") and doc["lm_eval"] is None
        assert "FAIL" in lines[0]


def test_no_harness_is_a_failed_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERMATRIX_EVAL_VENV", str(tmp_path / "none"))
    rec = run_eval("gsm8k", TASK, target=TARGET, identity=IDENTITY, concurrency=2, job_dir=tmp_path,
                   catalog_root=tmp_path, threshold=None)
    assert rec.status == "failed" and "lm-eval not installed" in (rec.error or "")
    assert read_eval_file(tmp_path / "eval-gsm8k-c2.json").status == "failed"


def test_hub_is_offline_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMX_FAKE_MODE", "nothing")
    exe = fake_harness_python(tmp_path / "bin")
    argv = [str(exe), "--output_path", str(tmp_path)]
    assert run_harness(argv, tmp_path / "a.log", 30, tmp_path).ok
    assert "hub offline: 1 1" in (tmp_path / "a.log").read_text()
    monkeypatch.setenv("INFERMATRIX_EVAL_ONLINE", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    assert run_harness(argv, tmp_path / "b.log", 30, tmp_path).ok
    assert "hub offline: None None" in (tmp_path / "b.log").read_text()
