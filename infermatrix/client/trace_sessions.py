"""Recorded agent traces: a manifest naming per-task JSONL files of turns, replayed
verbatim."""

from __future__ import annotations

from pathlib import Path

from .errors import ClientInputError
from .files import read_json
from .jsonl import read_jsonl
from .session_types import ContextMode, Session, StoredSessions, Turn

MANIFEST_FORMAT = "infermatrix-agentic-trace"


class TraceSource(StoredSessions):
    """A manifest (JSON) naming per-task JSONL files of turns::

        {"format": "infermatrix-agentic-trace", "version": 1, "context": "delta",
         "tasks": [{"id": "task-000", "file": "tasks/task-000.jsonl"}, ...]}

    Each line is one turn: ``conversation_id``, ``turn`` (optional, sorts), OpenAI ``messages``,
    ``target_output_tokens`` (also ``output_tokens`` / ``max_tokens``) and
    ``simulated_tool_delay_ms_after``. A file may hold several conversations."""

    def __init__(self, manifest: str | Path) -> None:
        self.path = Path(manifest).expanduser()
        self.name = f"trace({self.path})"
        data = read_json(self.path)
        if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
            raise ClientInputError(f"{self.path}: a manifest is a JSON object with a 'tasks' list")
        context = data.get("context", "delta")
        if context not in ("delta", "full"):
            raise ClientInputError(
                f"{self.path}: context must be 'delta' or 'full', not {context!r}"
            )
        self.sessions: list[Session] = []
        for i, task in enumerate(data["tasks"]):
            file = task.get("file") if isinstance(task, dict) else task
            if not isinstance(file, str):
                raise ClientInputError(f"{self.path}: tasks[{i}] needs a 'file'")
            self.sessions += _read_turns(self.path.parent / file, context)
        if not self.sessions:
            raise ClientInputError(f"{self.path}: the trace set has no turns")


def _read_turns(path: Path, context: ContextMode) -> list[Session]:
    convs: dict[str, list[tuple[int, int, Turn]]] = {}
    for lineno, row in read_jsonl(path):
        try:
            cid = str(row["conversation_id"])
            msgs = row["messages"]
            out = row.get("target_output_tokens", row.get("output_tokens", row.get("max_tokens")))
            delay_ms = float(row.get("simulated_tool_delay_ms_after") or 0.0)
            order = int(row.get("turn", lineno))
        except (KeyError, TypeError, ValueError) as e:
            raise ClientInputError(f"{path}:{lineno}: bad turn ({e!r})") from e
        if not isinstance(msgs, list) or not all(isinstance(m, dict) and "role" in m for m in msgs):
            raise ClientInputError(f"{path}:{lineno}: 'messages' must be a list of OpenAI messages")
        if not isinstance(out, int) or out < 1:
            raise ClientInputError(
                f"{path}:{lineno}: target_output_tokens must be a positive integer"
            )
        convs.setdefault(cid, []).append(
            (order, lineno, Turn(out, delay_ms / 1000.0, messages=msgs))
        )
    return [
        Session(
            cid, [t for _, _, t in sorted(rows, key=lambda r: r[:2])], context, {"file": str(path)}
        )
        for cid, rows in convs.items()
    ]
