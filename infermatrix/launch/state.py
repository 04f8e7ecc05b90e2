"""Durable job states: what a run planned, what ran, what finished, what a crash cut short.

Each job manifest carries a ``state`` beside its measured ``status`` (ok / partial / failed):

- ``running``: the runner is measuring it — or was, until it died (``kill -9``, a lost node):
  a ``running`` manifest whose runner (``owner``: host, pid, start time) is gone reads as
  ``interrupted`` (``job_state``);
- ``done``: every level ran to its end (each one ok, or failed by its error-rate threshold);
- ``failed``: the job stopped on an error (the server did not start or died, ``--on-level-failure
  stop``);
- ``interrupted``: a signal stopped it (SIGTERM, SIGINT, SIGHUP).

A sweep's ``run.json`` lists every planned job from the start (``pending`` until it starts, with
the job itself, so a resume needs no re-planning) and is rewritten, atomically, at every change.

``--resume RUN_ID`` re-runs every job that is not ``done``. Within such a job the levels already
recorded ok are kept — their files are never rewritten — and only the others are measured (a
level file written just before a kill -9, whose manifest entry never was, counts as recorded); what
an earlier attempt left (its error, its failed levels) is kept under ``previous_attempts``.
Each level entry records the SHA-256 of the file written (``sha256``): a resume trusts no
``done`` and no level whose file no longer matches it (truncated, edited, replaced), and
measures those levels again.
"""

from __future__ import annotations

import hashlib
import platform
from pathlib import Path
from typing import Any

from ..catalog.safety import UnsafeValue, safe_id
from ..errors import UsageError
from ..jsonio import read_bounded, read_json_bounded, write_json_atomic
from ..plan.jobs import Job
from . import pidfile
from .provenance import utc_now

STATES = ("pending", "running", "done", "failed", "interrupted")
UNFINISHED = frozenset({"pending", "running", "failed", "interrupted"})  # what --resume re-runs
RUN_FILE = "run.json"
MANIFEST = "manifest.json"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc = read_json_bounded(path)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def runner_gone(owner: Any) -> bool:
    """Has the runner a manifest names stopped? (On another host: we cannot tell, say no.)"""
    if not isinstance(owner, dict) or owner.get("host") != platform.node():
        return False
    return not pidfile.alive(owner)


def job_state(manifest: dict[str, Any]) -> str:
    """The state a manifest records, with a dead runner's ``running`` read as ``interrupted``."""
    state = manifest.get("state")
    if state not in STATES:  # written before states existed: judge by its status
        state = "running" if manifest.get("status") == "running" else (
            "failed" if manifest.get("error") else "done")
    if state == "running" and runner_gone(manifest.get("owner")):
        return "interrupted"
    return state


# ------------------------------------------------------------------ one job's manifest


def file_digest(path: Path) -> str | None:
    """The SHA-256 of a level file as written (None when it cannot be read)."""
    try:
        return hashlib.sha256(read_bounded(path)).hexdigest()
    except OSError:
        return None


def _level_ok(job_dir: Path, level: dict[str, Any]) -> bool:
    """A level is finished when the manifest and its own file both say it is ok, and the file
    still holds what was written (its recorded checksum, where the manifest has one)."""
    name = level.get("file")
    if level.get("status") != "ok" or not isinstance(name, str) or "/" in name:
        return False
    if level.get("sha256") is not None and file_digest(job_dir / name) != level["sha256"]:
        return False
    doc = _read(job_dir / name)
    block = doc.get("infermatrix") if doc else None
    return isinstance(block, dict) and block.get("status") == "ok"


def _unrecorded_levels(job_dir: Path, recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Levels whose file was written but whose manifest entry was not: a level's file is
    written (atomically) before the manifest, so a kill -9 between the two leaves it measured
    and complete. Its own ``infermatrix`` block says what the entry would have said (what
    happened between the levels, drain and flush, stays in that block)."""
    known = {lv.get("concurrency") for lv in recorded}
    found = []
    for path in sorted(job_dir.glob("conc-*.json")):
        conc = path.stem.removeprefix("conc-")
        if not conc.isdigit() or int(conc) in known:
            continue
        doc = _read(path)
        block = doc.get("infermatrix") if doc else None
        if isinstance(block, dict) and block.get("concurrency") == int(conc):
            found.append({"concurrency": int(conc), "status": block.get("status"),
                          "file": path.name, "error": block.get("error")})
    return found


def opening(job_dir: Path) -> dict[str, Any]:
    """Manifest fields of a job starting now. When an earlier attempt left a manifest here (only
    ``--resume`` gets this far), its finished levels are carried over and the rest of it is kept
    under ``previous_attempts``."""
    fields: dict[str, Any] = {"state": "running", "owner": pidfile.me(), "attempt": 1}
    old = _read(job_dir / MANIFEST)
    if old is None:
        return fields
    levels = [lv for lv in old.get("levels") or [] if isinstance(lv, dict)]
    levels += _unrecorded_levels(job_dir, levels)
    kept = [{**lv, "sha256": lv.get("sha256") or file_digest(job_dir / lv["file"])}
            for lv in levels if _level_ok(job_dir, lv)]
    earlier = {k: old.get(k) for k in ("started_at", "finished_at", "status", "error")}
    earlier["state"] = job_state(old)
    kept_files = {lv["file"] for lv in kept}
    earlier["levels"] = [lv for lv in levels
                         if lv.get("file") not in kept_files and lv.get("status") != "skipped"]
    return {**fields, "levels": kept, "attempt": int(old.get("attempt") or 1) + 1,
            "previous_attempts": [*old.get("previous_attempts", []), earlier]}


def to_measure(concurrency: list[int], manifest: dict[str, Any]) -> list[int]:
    """The levels still to measure: every one but those carried over from an earlier attempt."""
    done = {lv["concurrency"] for lv in manifest["levels"]}
    return [c for c in concurrency if c not in done]


def closing(manifest: dict[str, Any]) -> str:
    """The state a job ends in (``interrupted`` is set where the signal is caught)."""
    if manifest.get("state") == "interrupted":
        return "interrupted"
    return "failed" if manifest.get("error") else "done"


def check_fresh(job_dir: Path, run_id: str) -> None:
    """Refuse to measure a job again into a folder that already holds it (without --resume)."""
    if (job_dir / MANIFEST).exists():
        raise UsageError(f"{job_dir}: run {run_id} already holds this job; finish it with "
                         f"--resume {run_id}, or choose another --run-id")


def checked_state(job_dir: Path, manifest: dict[str, Any]) -> str:
    """``job_state``, except that a ``done`` job with an ok level whose file no longer matches
    its checksum (or no longer reads as ok) is ``interrupted``: a resume measures that level
    again and keeps the rest."""
    state = job_state(manifest)
    levels = [lv for lv in manifest.get("levels") or [] if isinstance(lv, dict)]
    if state == "done" and not all(_level_ok(job_dir, lv) for lv in levels if lv.get("status") == "ok"):
        return "interrupted"
    return state


def finished(job_dir: Path) -> bool:
    """Is the job in this folder done, its level files intact (so a resume leaves it alone)?"""
    manifest = _read(job_dir / MANIFEST)
    return manifest is not None and checked_state(job_dir, manifest) == "done"


def check_resumable(job_dir: Path) -> None:
    """A job whose runner is still alive is not resumed under its feet."""
    manifest = _read(job_dir / MANIFEST)
    owner = manifest.get("owner") if manifest else None
    if manifest and manifest.get("state") == "running" and isinstance(owner, dict) \
            and owner.get("host") == platform.node() and pidfile.alive(owner):
        raise UsageError(f"{job_dir}: still being measured by pid {owner.get('pid')}; "
                         "stop that run first")


# ------------------------------------------------------------------ what `run`/`sweep` do with a folder



def run_id_of(run_id: str | None, resume: str | None) -> str | None:
    """The run id `--resume RUN_ID` or `--run-id` names: it names a folder, so a safe file name
    (never a path or a line break)."""
    if resume is not None and run_id is not None and run_id != resume:
        raise UsageError(f"--resume {resume} names the run; drop --run-id {run_id}")
    named, flag = (resume, "--resume") if resume is not None else (run_id, "--run-id")
    if named is None:
        return None
    try:
        return safe_id(named, flag)
    except UnsafeValue as exc:
        raise UsageError(str(exc)) from None


def should_run(job_dir: Path, run_id: str, resume: bool) -> bool:
    """Whether to measure the job in ``job_dir`` now: a fresh run refuses a folder that holds it
    already; a resume skips a job that is done and waits for no live runner."""
    if not resume:
        check_fresh(job_dir, run_id)
        return True
    if finished(job_dir):
        return False
    check_resumable(job_dir)
    return True


def unfinished_jobs(run_dir: Path) -> list[Job]:
    """The jobs of a run folder that are not done (from their manifests), by id."""
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such run to resume")
    jobs = []
    for path in sorted(run_dir.glob(f"jobs/*/{MANIFEST}")):
        manifest = _read(path)
        if manifest is None or checked_state(path.parent, manifest) == "done":
            continue
        try:
            jobs.append(Job.model_validate(manifest.get("job")))
        except ValueError as exc:
            raise UsageError(f"{path}: job: {str(exc).splitlines()[0]}") from None
    return jobs


# ------------------------------------------------------------------ a sweep's run.json


class RunLedger:
    """``run.json``: every job of a sweep with its state, rewritten atomically at each change."""

    def __init__(self, run_dir: Path, doc: dict[str, Any]):
        self.run_dir, self.doc = run_dir, doc
        self.entries = {entry["id"]: entry for entry in doc["jobs"]}

    @property
    def path(self) -> Path:
        return self.run_dir / RUN_FILE

    def save(self) -> None:
        # one line: rewritten at every change of every job, indented it cost O(jobs²) of Python
        # encoding (~6 CPU-s over the nightly's 147 jobs)
        write_json_atomic(self.path, self.doc, indent=None)

    @classmethod
    def create(cls, run_dir: Path, header: dict[str, Any], jobs: list[Job]) -> RunLedger:
        if (run_dir / RUN_FILE).exists():
            run_id = header.get("run_id", run_dir.name)
            raise UsageError(f"{run_dir / RUN_FILE}: run {run_id} exists; finish it with "
                             f"--resume {run_id}, or choose another --run-id")
        doc = {**header, "state": "running", "owner": pidfile.me(),
               "jobs": [{"id": j.id, "state": "pending", "status": None, "error": None,
                         "job": j.model_dump(mode="json")} for j in jobs]}
        ledger = cls(run_dir, doc)
        ledger.save()
        return ledger

    @classmethod
    def reopen(cls, run_dir: Path) -> tuple[RunLedger, list[Job]]:
        """The ledger of an earlier run and its jobs, states brought up to date from the job
        manifests (a job its runner left ``running`` is ``interrupted``)."""
        doc = _read(run_dir / RUN_FILE)
        if doc is None or doc.get("kind") != "run-manifest" or not isinstance(doc.get("jobs"), list):
            raise UsageError(f"{run_dir / RUN_FILE}: no sweep to resume there")
        if doc.get("state") == "running" and not runner_gone(doc.get("owner")) \
                and isinstance(doc.get("owner"), dict) and doc["owner"].get("host") == platform.node():
            raise UsageError(f"{run_dir}: still running as pid {doc['owner'].get('pid')}; "
                             "stop that run first")
        try:
            jobs = [Job.model_validate(entry["job"]) for entry in doc["jobs"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{run_dir / RUN_FILE}: a job entry is not a job "
                             f"({str(exc).splitlines()[0]})") from None
        ledger = cls(run_dir, doc)
        for job in jobs:
            manifest = _read(run_dir / "jobs" / job.id / MANIFEST)
            entry = ledger.entries[job.id]
            if manifest is None:
                entry["state"] = "pending"
            else:
                entry.update(state=checked_state(run_dir / "jobs" / job.id, manifest),
                             status=manifest.get("status"), error=manifest.get("error"))
        doc.update(state="running", owner=pidfile.me(), resumed_at=utc_now())
        doc["resumes"] = int(doc.get("resumes") or 0) + 1
        ledger.save()
        return ledger, jobs

    def state(self, job_id: str) -> str:
        return self.entries[job_id]["state"]

    def started(self, job_id: str) -> None:
        self.entries[job_id]["state"] = "running"
        self.save()

    def ended(self, job_id: str, job_dir: Path, status: str, error: str | None) -> None:
        manifest = _read(job_dir / MANIFEST) or {}
        self.entries[job_id].update(state=job_state(manifest) if manifest else "failed",
                                    status=status, error=error)
        self.save()

    def interrupted(self, job_id: str | None, reason: str) -> None:
        """A signal stopped the sweep: the job it was on is interrupted, the rest stay pending."""
        if job_id is not None:
            self.entries[job_id].update(state="interrupted", error=f"interrupted: {reason}")
        self.close("interrupted")

    def close(self, state: str = "done") -> None:
        self.doc.update(state=state, finished_at=utc_now())
        self.save()

    def unfinished(self) -> list[str]:
        return [e["id"] for e in self.doc["jobs"] if e["state"] != "done"]
