"""A small GitHub Actions interpreter for the tests: runs a workflow's jobs in `needs` order,
their `run:` steps with bash and the env GitHub would give, reusable workflows and matrices
expanded, `if:` and `${{ }}` evaluated by GitHub's expression rules (the subset the workflows
use; anything else fails the test, never passes it by accident). Actions are emulated:
checkout and setup-python (the test's own copy and interpreter; pip install is skipped, this
checkout is installed), upload/download-artifact (a folder per artifact, with GitHub's root
rules), upload-pages-artifact and deploy-pages (recorded). Nothing reaches the network."""

from __future__ import annotations

import fnmatch
import glob
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from imx_workflows import LOCAL_CALL, WORKFLOWS, job_order, load

TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(\d+(?:\.\d+)?)|([A-Za-z_][\w-]*)"
                   r"|(&&|\|\||==|!=|<=|>=|[<>!()\[\].,*]))")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    while pos < len(text.rstrip()):
        m = TOKEN.match(text, pos)
        assert m, f"cannot read expression {text!r} at {pos}"
        out.append(m.group(0).strip())
        pos = m.end()
    return out


def truthy(v: Any) -> bool:
    return not (v is None or v is False or v == "" or
                (isinstance(v, (int, float)) and not isinstance(v, bool) and (v == 0 or math.isnan(v))))


def _number(v: Any) -> float:
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v) if str(v).strip() else 0.0
    except ValueError:
        return math.nan


def _equal(a: Any, b: Any) -> bool:
    if type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                              and not isinstance(a, bool) and not isinstance(b, bool)):
        return a.lower() == b.lower() if isinstance(a, str) else a == b
    return _number(a) == _number(b)


def to_str(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        return json.dumps(v, indent=2)
    return str(v)


class Expr:
    """Recursive descent over GitHub's expression grammar: || && == != ! member index call."""

    def __init__(self, text: str, ctx: dict[str, Any], status: dict[str, bool]) -> None:
        self.toks, self.i, self.ctx, self.status = _tokens(text), 0, ctx, status

    def value(self) -> Any:
        v = self._or()
        assert self.i == len(self.toks), f"trailing tokens {self.toks[self.i:]}"
        return v

    def _peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _take(self, tok: str | None = None) -> str:
        got = self.toks[self.i]
        assert tok is None or got == tok, f"expected {tok}, got {got} in {self.toks}"
        self.i += 1
        return got

    def _or(self) -> Any:  # the first truthy operand, else the last
        return self._chain("||", self._and, lambda v, right: v if truthy(v) else right)

    def _and(self) -> Any:  # the first falsy operand, else the last
        return self._chain("&&", self._eq, lambda v, right: right if truthy(v) else v)

    def _chain(self, op: str, operand: Any, combine: Any) -> Any:
        v = operand()
        while self._peek() == op:
            self._take()
            v = combine(v, operand())
        return v

    def _eq(self) -> Any:
        v = self._unary()
        while self._peek() in ("==", "!="):
            op = self._take()
            right = self._unary()
            v = _equal(v, right) == (op == "==")
        return v

    def _unary(self) -> Any:
        if self._peek() == "!":
            self._take()
            return not truthy(self._unary())
        return self._postfix()

    def _postfix(self) -> Any:
        v = self._primary()
        while self._peek() in (".", "["):
            if self._take() == ".":
                v = v.get(self._take()) if isinstance(v, dict) else None
            else:
                key = self._or()
                self._take("]")
                v = v.get(to_str(key)) if isinstance(v, dict) else (
                    v[int(key)] if isinstance(v, list) and int(key) < len(v) else None)
        return v

    def _primary(self) -> Any:
        tok = self._take()
        if tok == "(":
            v = self._or()
            self._take(")")
            return v
        if tok.startswith("'"):
            return tok[1:-1].replace("''", "'")
        if tok[0].isdigit():
            return float(tok) if "." in tok else int(tok)
        if tok in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[tok]
        if self._peek() == "(":
            self._take()
            args = []
            while self._peek() != ")":
                args.append(self._or())
                if self._peek() == ",":
                    self._take()
            self._take(")")
            return self._call(tok, args)
        assert tok in self.ctx, f"unknown context {tok}"
        return self.ctx[tok]

    def _call(self, name: str, args: list[Any]) -> Any:
        if name in self.status:
            return self.status[name]
        if name == "fromJSON":
            return json.loads(args[0])
        if name == "toJSON":
            return json.dumps(args[0], indent=2)
        if name == "format":
            return re.sub(r"\{(\d+)\}", lambda m: to_str(args[1 + int(m.group(1))]), args[0])
        raise AssertionError(f"function {name} is not emulated")


EMBED = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def evaluate(value: Any, ctx: dict[str, Any], status: dict[str, bool] | None = None) -> Any:
    """A workflow value: a lone ${{ }} keeps its type, embedded ones become text."""
    status = status or {"success": True, "always": True, "cancelled": False, "failure": False}
    if isinstance(value, dict):
        return {k: evaluate(v, ctx, status) for k, v in value.items()}
    if isinstance(value, list):
        return [evaluate(v, ctx, status) for v in value]
    if not isinstance(value, str):
        return value
    whole = EMBED.fullmatch(value.strip())
    if whole:
        return Expr(whole.group(1), ctx, status).value()
    return EMBED.sub(lambda m: to_str(Expr(m.group(1), ctx, status).value()), value)


def condition(text: Any, ctx: dict[str, Any], status: dict[str, bool]) -> bool:
    if text is None:
        return status["success"]
    inner = EMBED.fullmatch(str(text).strip())
    expr = inner.group(1) if inner else str(text)
    uses_status = re.search(r"\b(success|always|cancelled|failure)\(", expr)
    value = truthy(Expr(expr, ctx, status).value())
    return value if uses_status else value and status["success"]


@dataclass
class Run:
    """One workflow run: its workspace root, artifacts and what happened."""

    root: Path
    checkout: Path  # what actions/checkout brings (the repository's catalog)
    github: dict[str, Any]
    env: dict[str, str] = field(default_factory=dict)  # the runner's own (PATH, ...)
    artifacts: dict[str, Path] = field(default_factory=dict)
    jobs: list[dict[str, Any]] = field(default_factory=list)  # every job that ran, in order
    summaries: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    _n: itertools.count = field(default_factory=itertools.count)

    def workflow(self, name: str, inputs: dict[str, Any], secrets: dict[str, str]) -> dict:
        """Run a workflow; returns its jobs' results and outputs (the `needs` context)."""
        doc = load(name)
        needs: dict[str, Any] = {}
        for job_name in job_order(doc):
            job = doc["jobs"][job_name]
            deps = job.get("needs", [])
            deps = [deps] if isinstance(deps, str) else deps
            ctx = {"github": self.github, "inputs": inputs, "vars": {}, "secrets": secrets,
                   "needs": {d: needs[d] for d in deps}, "env": {}}
            ok = all(needs[d]["result"] == "success" for d in deps)
            status = {"success": ok, "always": True, "cancelled": False, "failure": not ok}
            if not condition(job.get("if"), ctx, status):
                needs[job_name] = {"result": "skipped", "outputs": {}}
                continue
            cells = self._matrix(job.get("strategy", {}).get("matrix"), ctx)
            results = [self._job(doc, name, job_name, job, {**ctx, "matrix": cell})
                       for cell in cells]
            failed = any(r["result"] == "failure" for r in results)
            outputs = {k: v for r in results for k, v in r["outputs"].items()}
            needs[job_name] = {"result": "failure" if failed else "success", "outputs": outputs}
        return needs

    def _matrix(self, spec: Any, ctx: dict[str, Any]) -> list[dict[str, Any]]:
        if spec is None:
            return [{}]
        spec = evaluate(spec, ctx)
        if "include" in spec:
            return list(spec["include"])
        axes = sorted(spec)
        return [dict(zip(axes, combo, strict=True))
                for combo in itertools.product(*(spec[a] for a in axes))]

    def _job(self, doc: dict, wf: str, job_name: str, job: dict, ctx: dict) -> dict:
        called = LOCAL_CALL.fullmatch(job.get("uses", ""))
        if "uses" in job:
            assert called, f"{wf}:{job_name}: only local reusable workflows are emulated"
            spec = load(called.group(1))["on"]["workflow_call"]
            given = evaluate(job.get("with", {}), ctx)
            inputs = {k: _typed(given.get(k), v.get("type")) for k, v in spec["inputs"].items()}
            secrets = {k: to_str(evaluate(v, ctx)) for k, v in job.get("secrets", {}).items()}
            inner = self.workflow(called.group(1), inputs, secrets)
            failed = any(r["result"] == "failure" for r in inner.values())
            return {"result": "failure" if failed else "success", "outputs": {}}
        ws = self.root / "ws" / f"{next(self._n):03d}-{job_name}"
        ws.mkdir(parents=True)
        record = {"workflow": wf, "job": job_name, "matrix": ctx.get("matrix"),
                  "runs-on": evaluate(job["runs-on"], ctx), "steps": []}
        self.jobs.append(record)
        steps: dict[str, Any] = {}
        job_env = {**evaluate(doc.get("env", {}), ctx), **evaluate(job.get("env", {}), ctx)}
        ok = True
        for i, step in enumerate(job["steps"]):
            sctx = {**ctx, "steps": steps, "env": job_env, "job": {"status": "success" if ok else "failure"}}
            status = {"success": ok, "always": True, "cancelled": False, "failure": not ok}
            sid = step.get("id", f"_{i}")
            if not condition(step.get("if"), sctx, status):
                steps[sid] = {"outcome": "skipped", "conclusion": "skipped", "outputs": {}}
                record["steps"].append((step.get("name"), "skipped"))
                continue
            env = {k: to_str(v) for k, v in {**job_env, **evaluate(step.get("env", {}), sctx)}.items()}
            outcome, outputs = self._step(step, sctx, env, ws)
            record["steps"].append((step.get("name"), outcome))
            conclusion = "success" if step.get("continue-on-error") else outcome
            steps[sid] = {"outcome": outcome, "conclusion": conclusion, "outputs": outputs}
            ok = ok and conclusion == "success"
        outputs = {k: to_str(v) for k, v in
                   evaluate(job.get("outputs", {}), {**ctx, "steps": steps}).items()}
        record["result"] = "success" if ok else "failure"
        return {"result": record["result"], "outputs": outputs}

    def _step(self, step: dict, ctx: dict, env: dict[str, str], ws: Path) -> tuple[str, dict]:
        if "run" in step:
            script = step["run"]
            if script.startswith("python -m pip install"):  # this checkout is installed
                return "success", {}
            out, summary = ws / f".out-{next(self._n)}", ws / f".summary-{next(self._n)}"
            full = {**self.env, **env, "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary),
                    "RUNNER_TEMP": str(ws / ".tmp"), "GITHUB_ACTIONS": "true", "CI": "true",
                    "GITHUB_RUN_ID": str(self.github["run_id"])}
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], env=full, cwd=ws, text=True,
                                  capture_output=True, timeout=600, check=False)
            if summary.exists():
                self.summaries.append(summary.read_text())
            outputs = read_outputs(out) if out.exists() else {}
            if proc.returncode:
                self.jobs[-1]["steps"].append(("stderr", proc.stderr[-3000:]))
            return ("success" if proc.returncode == 0 else "failure"), outputs
        action, args = step["uses"].split("@")[0], evaluate(step.get("with", {}), ctx)
        if action == "actions/checkout":
            for part in ("matrix", "runners", "benchmarks"):
                shutil.copytree(self.checkout / part, ws / part)
            return "success", {}
        if action == "actions/setup-python":
            return "success", {}
        if action in ("actions/upload-artifact", "actions/upload-pages-artifact"):
            name = args.get("name", "github-pages")
            assert name not in self.artifacts, f"artifact {name} uploaded twice"
            found = _upload(ws, str(args["path"]), self.root / "artifacts" / name)
            if found:  # no files: no artifact (if-no-files-found: error fails the step)
                self.artifacts[name] = self.root / "artifacts" / name
            return ("failure" if not found and args.get("if-no-files-found") == "error"
                    else "success"), {}
        if action == "actions/download-artifact":
            names = [args["name"]] if "name" in args else sorted(
                n for n in self.artifacts if fnmatch.fnmatchcase(n, args["pattern"]))
            if not all(n in self.artifacts for n in names):
                return "failure", {}
            for n in names:
                shutil.copytree(self.artifacts[n], ws / args["path"], dirs_exist_ok=True)
            return "success", {}
        if action == "actions/deploy-pages":
            self.pages.append("deployed")
            return "success", {"page_url": "https://example.invalid/"}
        raise AssertionError(f"action {action} is not emulated")


def _typed(value: Any, kind: str | None) -> Any:
    if kind == "boolean":
        return value if isinstance(value, bool) else to_str(value) == "true"
    if kind == "number":
        return value if isinstance(value, (int, float)) else float(value)
    return to_str(value)


def _upload(ws: Path, paths: str, dest: Path) -> int:
    """upload-artifact's rule: the artifact's root is the common folder of the search paths
    (a glob's literal prefix, or the folder named)."""
    patterns = [p.strip() for p in paths.splitlines() if p.strip()]
    roots = [Path(re.split(r"[*?\[]", p)[0]) if re.search(r"[*?\[]", p) else Path(p)
             for p in patterns]
    roots = [r if (ws / r).is_dir() or not str(r) else r.parent for r in roots]
    root = Path(os.path.commonpath([str(r) for r in roots])) if roots else Path()
    files = set()
    for p in patterns:
        for hit in glob.glob(p, root_dir=ws):
            target = ws / hit
            files |= {f for f in target.rglob("*") if f.is_file()} if target.is_dir() else {target}
    for f in files:
        out = dest / f.relative_to(ws / root)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, out)
    return len(files)


def read_outputs(path: Path) -> dict[str, str]:
    text = path.read_text()
    return {k: v for k, _, v in re.findall(r"^(\w+)<<(\S+)\n(.*?)\n\2$", text, re.S | re.M)}


def runner_env() -> dict[str, str]:
    """What a GitHub-hosted runner has before a step's env: the tools on PATH, a HOME."""
    return {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": os.environ.get("HOME", "/tmp"), "PYTHONUNBUFFERED": "1",
            "RUNNER_ENVIRONMENT": "github-hosted"}


__all__ = ["Run", "WORKFLOWS", "evaluate", "read_outputs", "runner_env", "to_str", "truthy"]
