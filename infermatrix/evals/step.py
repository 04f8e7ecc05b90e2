"""The eval step of a job: run one lm-eval task against the job's running server, record it.

Whatever happens (no harness, lm-eval crashes or hangs, output missing or malformed) an
``eval-<task>-c<N>.json`` is written: status ``ok`` with the parsed score, or ``failed`` with the
reason. Only a parsed score can ever pass the gate.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..catalog.accuracy import EvalTask
from ..jsonio import write_json_atomic
from .harness import Harness, HarnessMissing, find_harness, lm_eval_argv, run_harness
from .parse import EvalOutputError, find_results_file, load_results, parse_results
from .record import EvalRecord, document, file_name, identity_fields


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class EvalServer:
    """The server under test, as the job knows it."""

    base_url: str
    served_model: str
    endpoint: str  # completions | chat (the workload's)


def _outcome(task: EvalTask, harness: Harness, target: EvalServer, concurrency: int, root: Path,
             out: Path, log_path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(fields for the record, lm-eval's results JSON or None) for one harness run."""
    include = None
    if task.include_path:
        include = Path(task.include_path)
        include = include if include.is_absolute() else root / include
    argv = lm_eval_argv(harness, task, base_url=target.base_url, served_model=target.served_model,
                        endpoint=target.endpoint, concurrency=concurrency,
                        output_path=out, include_path=include)
    fields: dict[str, Any] = {"command": argv}
    run = run_harness(argv, log_path, task.timeout_minutes * 60.0, cwd=out.parent)
    if run.returncode is None:
        return {**fields, "error": f"lm-eval timed out after {task.timeout_minutes} min"}, None
    if not run.ok:
        last = run.log_tail.splitlines()[-1] if run.log_tail else ""
        return {**fields, "error": f"lm-eval exited with code {run.returncode}: {last}"[:500]}, None
    try:
        doc = load_results(find_results_file(out))
        score = parse_results(doc, task.lm_eval_task, task.metric)
    except EvalOutputError as exc:
        return {**fields, "error": str(exc)}, None
    return {**fields, "status": "ok", "score": score.score, "stderr": score.stderr,
            "task_version": score.task_version, "n_samples": score.n_samples,
            "n_samples_total": score.n_samples_total, "num_fewshot": score.num_fewshot,
            "lm_eval_version": score.lm_eval_version}, doc


def run_eval(task_name: str, task: EvalTask, *, target: EvalServer, identity: dict[str, Any],
             concurrency: int, job_dir: Path, catalog_root: Path, threshold: float | None,
             harness: Harness | None = None,
             log: Callable[[str], None] = lambda m: None) -> EvalRecord:
    """Evaluate ``task`` now, after level ``concurrency``; write and return its record."""
    eval_conc = task.concurrency or concurrency
    fields: dict[str, Any] = {
        **identity_fields(identity), "concurrency": concurrency, "task": task_name,
        "lm_eval_task": task.lm_eval_task, "metric": task.metric, "num_fewshot": task.num_fewshot, "limit": task.limit,
        "eval_concurrency": eval_conc, "endpoint": target.endpoint, "threshold": threshold,
        "started_at": now(), "status": "failed",
    }
    name = file_name(task_name, concurrency)
    results: dict[str, Any] | None = None
    try:
        harness = harness or find_harness()
        # lm-eval's own output goes to a scratch folder: the job folder keeps only our record
        # (with lm-eval's results embedded) and the log, so collect never meets foreign JSON.
        with tempfile.TemporaryDirectory(prefix="imx-eval-") as tmp:
            outcome, results = _outcome(task, harness, target, concurrency, catalog_root,
                                        Path(tmp) / "out", job_dir / name.replace(".json", ".log"))
        fields.update(outcome)
    except HarnessMissing as exc:
        fields["error"] = str(exc)
    except (OSError, ValueError) as exc:  # e.g. a model name lm-eval's arg syntax cannot carry
        fields["error"] = f"{type(exc).__name__}: {exc}"
    fields["finished_at"] = now()
    rec = EvalRecord.model_validate(fields)
    write_json_atomic(job_dir / name, document(rec, results))
    if not rec.ok:
        verdict = "FAIL"
    elif threshold is None:
        verdict = "no threshold"
    else:
        verdict = "pass" if rec.score >= threshold else "FAIL"  # type: ignore[operator]
    shown = f"{rec.score:.3f}" if rec.ok else f"failed ({rec.error})"
    log(f"  eval {task_name} after c={concurrency}: {shown} [{verdict}]")
    return rec
