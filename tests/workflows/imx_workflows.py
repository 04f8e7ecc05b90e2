"""Reading .github/workflows/*.yml for the tests: jobs, steps, `run:` commands, expressions."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
JOB_WORKFLOW_REF = "$/.github/workflows/job.yml"
LOCAL_CALL = re.compile(r"\$/\.github/workflows/([\w.-]+)")

EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(doc, dict), name
    if True in doc:  # YAML 1.1 reads the key `on` as the boolean true
        doc["on"] = doc.pop(True)
    return doc


def walk_strings(node: Any) -> list[str]:
    """Every string value (and key) anywhere below ``node``."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        out: list[str] = []
        for key, value in node.items():
            out.extend(walk_strings(key) if isinstance(key, str) else [])
            out.extend(walk_strings(value))
        return out
    if isinstance(node, list):
        return [s for item in node for s in walk_strings(item)]
    return []


def expressions(node: Any) -> list[str]:
    """The inside of every ``${{ ... }}`` below ``node``, plus bare ``if:`` conditions."""
    found = [m.group(1).strip() for s in walk_strings(node) for m in EXPR.finditer(s)]
    found.extend(_bare_ifs(node))
    return found


def _bare_ifs(node: Any) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        cond = node.get("if")
        if isinstance(cond, str) and "${{" not in cond:
            out.append(cond)
        for value in node.values():
            out.extend(_bare_ifs(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(_bare_ifs(item))
    return out


def references(node: Any, context: str) -> set[str]:
    """Property names read from a context: ``references(doc, "matrix")`` -> {"id", ...}."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(context)}\.([A-Za-z_][\w-]*)")
    return {m.group(1) for e in expressions(node) for m in pattern.finditer(e)}


def job_order(doc: dict[str, Any]) -> list[str]:
    """Jobs in dependency order (``needs``), file order among equals."""
    jobs = doc["jobs"]
    needs = {name: _needs(job) for name, job in jobs.items()}
    order: list[str] = []
    while len(order) < len(jobs):
        ready = [n for n in jobs if n not in order and needs[n] <= set(order)]
        assert ready, f"cycle in needs: {needs}"
        order.append(ready[0])
    return order


def _needs(job: dict[str, Any]) -> set[str]:
    value = job.get("needs", [])
    return {value} if isinstance(value, str) else set(value)


@dataclass(frozen=True)
class RunStep:
    workflow: str
    job: str
    name: str
    script: str
    env: dict[str, str]

    def commands(self) -> list[list[str]]:
        """Each non-comment line of the script, split like the shell would (no expansion)."""
        out = []
        for line in self.script.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(shlex.split(line, comments=True))
        return out


def run_steps(name: str, expand_calls: bool = True) -> list[RunStep]:
    """Every ``run:`` step of a workflow in execution order, descending into local reusable
    workflow calls (job.yml, collect.yml)."""
    doc = load(name)
    steps: list[RunStep] = []
    for job_name in job_order(doc):
        job = doc["jobs"][job_name]
        if "uses" in job:
            called = LOCAL_CALL.fullmatch(job["uses"])
            if expand_calls and called:
                steps.extend(run_steps(called.group(1)))
            continue
        for i, step in enumerate(job.get("steps", [])):
            if "run" in step:
                env = {**doc.get("env", {}), **job.get("env", {}), **step.get("env", {})}
                steps.append(RunStep(name, job_name, step.get("name", f"step {i}"),
                                     step["run"], {k: str(v) for k, v in env.items()}))
    return steps


def infermatrix_stages(name: str, expand_calls: bool = True) -> list[str]:
    """The ``infermatrix`` subcommands a workflow runs, in order, consecutive repeats merged."""
    stages: list[str] = []
    for step in run_steps(name, expand_calls):
        for argv in step.commands():
            if argv and argv[0] == "infermatrix" and (not stages or stages[-1] != argv[1]):
                stages.append(argv[1])
    return stages


def uses_lines(name: str) -> list[tuple[int, str]]:
    """(line number, text) of every ``uses:`` line, raw, to check pins and their comments."""
    lines = (WORKFLOWS / name).read_text().splitlines()
    return [(i, line) for i, line in enumerate(lines, 1) if re.match(r"\s*(-\s+)?uses:", line)]


def all_workflows() -> list[str]:
    return sorted(p.name for p in WORKFLOWS.glob("*.y*ml"))
