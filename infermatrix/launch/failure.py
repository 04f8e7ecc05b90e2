"""A job that fails before or during its levels leaves a failure record: ``failure.json`` in
its job folder, read by ``collect`` like a level result (docs/results.md, "Failure records").

A failed job has no level results, so without this record a broken fleet would look like a
fleet with nothing to do. The record says at which stage it broke, why (one line a person can
act on), the server's log tail, and what job it was.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..jsonio import write_json_atomic
from .provenance import utc_now

FILE = "failure.json"
KIND = "job-failure"
TAIL_MARK = "log tail:"
MAX_REASON = 400
MAX_TAIL = 4000
# a log line that names the problem (a Python exception, docker's "docker: Cannot ...", "ERROR")
_TELLING = re.compile(r"error|exception|cannot|can't|could not|failed|refused|denied|not found|"
                      r"no such|out of memory|unable|invalid|killed", re.IGNORECASE)


def split_error(error: str) -> tuple[str, str]:
    """(headline, log tail) of an error; the tail is empty when the error carries none."""
    head, mark, tail = error.partition(TAIL_MARK)
    if not mark:
        first, _, rest = error.partition("\n")
        return first.strip(), rest.strip()
    return head.strip().rstrip(";:,").strip(), tail.strip()


def telling_line(tail: str) -> str | None:
    """The log line most likely to say why: the last one that reads like an error, else the
    last non-empty line."""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    telling = [ln for ln in lines if _TELLING.search(ln)]
    return (telling or lines or [None])[-1]


def reason_of(error: str) -> str:
    """One line: the error's headline and, from its log tail, the line that says why.
    ``both-0 exited with code 125 before serving: docker: Cannot connect to the Docker daemon``"""
    head, tail = split_error(error)
    why = telling_line(tail)
    text = f"{head}: {why}" if why and why not in head else head or (why or "failed")
    return " ".join(text.split())[:MAX_REASON]


def stage_of(manifest: dict[str, Any]) -> str:
    """Where the lifecycle was when it broke, from what the manifest recorded so far:
    ``launch`` (no server started), ``readiness`` (started, never proved it serves) or
    ``levels`` / ``capacity`` (measuring: the job's measurement kind)."""
    measured = any(lv.get("status") != "skipped" for lv in manifest.get("levels") or ())
    if "ready_s" in manifest or measured or manifest.get("launcher") == "virtual":
        measurement = (manifest.get("job") or {}).get("measurement") or {}
        return "capacity" if measurement.get("kind") == "capacity" else "levels"
    return "readiness" if "server_logs" in manifest else "launch"


def failure_record(manifest: dict[str, Any], simulated: bool) -> dict[str, Any]:
    job = manifest.get("job") or {}
    error = str(manifest.get("error") or "failed")
    _, tail = split_error(error)
    return {
        "schema_version": 1, "kind": KIND, "run_id": manifest.get("run_id"),
        "job_id": job.get("id"), "recipe": job.get("recipe"), "model": job.get("model"),
        "hardware": job.get("hardware"), "engine": job.get("engine"),
        "workload": job.get("workload"), "runner": job.get("runner"),
        "fingerprint": job.get("fingerprint"), "concurrency": job.get("concurrency") or [],
        "launcher": manifest.get("launcher"), "simulated": simulated,
        "stage": stage_of(manifest), "reason": reason_of(error), "log_tail": tail[-MAX_TAIL:],
        "error": error[:MAX_TAIL], "failed_at": manifest.get("finished_at") or utc_now(),
    }


def record_failure(job_dir: Path, manifest: dict[str, Any], simulated: bool) -> dict[str, Any] | None:
    """After a job: write its failure record when it failed with an error (not when a signal
    interrupted it: ``--resume`` finishes it), else remove one a previous attempt left."""
    path = Path(job_dir) / FILE
    if manifest.get("status") == "failed" and manifest.get("error") \
            and manifest.get("state") != "interrupted":
        record = failure_record(manifest, simulated)
        write_json_atomic(path, record)
        return record
    path.unlink(missing_ok=True)
    return None
