"""Run lm-evaluation-harness as a subprocess from its own virtual environment.

lm-eval pulls torch and its own dependency tree, so it never goes into infermatrix's venv:
scripts/setup-lm-eval.sh installs it into ``.venv-eval`` (or ``$INFERMATRIX_EVAL_VENV``) and we
only ever call its ``python -m lm_eval``. Datasets come from the local cache or local files:
the hub is switched off (unless $INFERMATRIX_EVAL_ONLINE=1), so a missing dataset fails fast
instead of hanging on the network.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..catalog.accuracy import EvalTask

VENV_ENV = "INFERMATRIX_EVAL_VENV"
ONLINE_ENV = "INFERMATRIX_EVAL_ONLINE"
DEFAULT_VENV = Path(__file__).resolve().parents[2] / ".venv-eval"
SETUP_HINT = "install it with scripts/setup-lm-eval.sh"
OFFLINE_ENV = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}
# lm-eval's model name and the path below the base URL, per workload endpoint.
MODELS = {"completions": ("local-completions", "/v1/completions"),
          "chat": ("local-chat-completions", "/v1/chat/completions")}


class HarnessMissing(RuntimeError):
    """No usable lm-eval installation; the message says where we looked and how to install."""


@dataclass(frozen=True)
class Harness:
    python: Path

    @property
    def prefix(self) -> list[str]:
        return [str(self.python), "-m", "lm_eval"]


def find_harness(venv: Path | str | None = None) -> Harness:
    """The eval venv's interpreter: ``venv``, else $INFERMATRIX_EVAL_VENV, else ``.venv-eval``."""
    where = Path(venv or os.environ.get(VENV_ENV) or DEFAULT_VENV)
    python = where / "bin" / "python"
    if not python.is_file():
        raise HarnessMissing(f"lm-eval not installed: no {python} ({SETUP_HINT})")
    probe = subprocess.run([str(python), "-c", "import lm_eval.models.openai_completions"],
                           capture_output=True, text=True, timeout=300, check=False)
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or ["?"])[-1]
        raise HarnessMissing(f"lm-eval in {where} does not import ({tail}); {SETUP_HINT}")
    return Harness(python)


def lm_eval_argv(harness: Harness, task: EvalTask, *, base_url: str, served_model: str,
                 endpoint: str, concurrency: int, output_path: Path,
                 include_path: Path | None = None) -> list[str]:
    """The exact command line. Every value is one argv element: nothing goes through a shell."""
    if endpoint not in MODELS:
        raise ValueError(f"unknown endpoint {endpoint!r} (expected one of {', '.join(MODELS)})")
    model, path = MODELS[endpoint]
    margs = {"model": served_model, "base_url": base_url.rstrip("/") + path,
             "num_concurrent": task.concurrency or concurrency, "max_retries": 3,
             # no tokenizer: it would be fetched from the hub; generate_until does not need one
             "tokenizer_backend": "none", "tokenized_requests": False,
             "timeout": 600}
    if task.max_gen_toks:
        margs["max_gen_toks"] = task.max_gen_toks
    for key, value in margs.items():  # a comma would split lm-eval's key=value list
        if "," in str(value):
            raise ValueError(f"model argument {key}={value!r} contains a comma")
    argv = [*harness.prefix, "run", "--model", model,
            "--model_args", ",".join(f"{k}={v}" for k, v in margs.items()),
            "--tasks", task.lm_eval_task, "--output_path", str(output_path), "--batch_size", "1"]
    if task.num_fewshot is not None:
        argv += ["--num_fewshot", str(task.num_fewshot)]
    if task.limit is not None:
        argv += ["--limit", str(task.limit)]
    if include_path is not None:
        argv += ["--include_path", str(include_path)]
    if endpoint == "chat":
        argv += ["--apply_chat_template"]
    return argv


@dataclass(frozen=True)
class HarnessRun:
    returncode: int | None  # None: killed at the time-out
    log_tail: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_harness(argv: list[str], log_path: Path, timeout_s: float, cwd: Path) -> HarnessRun:
    """Run ``argv`` with its output in ``log_path``; never raises for a failing or hung harness."""
    # offline unless the runner says it may download (a GPU fleet filling its dataset cache)
    online = os.environ.get(ONLINE_ENV) == "1"
    env = {**os.environ, **({} if online else OFFLINE_ENV)}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as log:
        log.write("$ " + shlex.join(argv) + "\n")
        log.flush()
        try:
            # own session: a time-out kills lm-eval and anything it started, nothing else
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    cwd=cwd, env=env, start_new_session=True)
        except OSError as exc:
            return HarnessRun(None, f"cannot start lm-eval: {exc}")
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
    lines = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return HarnessRun(code, "\n".join(lines[-15:]))
