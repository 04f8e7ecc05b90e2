"""Fake cluster tools for the launch tests: docker, salloc, srun, sbatch, scancel, squeue,
scontrol, ssh and nvidia-smi.

Each appends one JSON line {"tool", "argv", "cwd"} to $FAKEBIN_LOG, then behaves just enough
like the real tool for `infermatrix run` to work end to end on loopback. Where a real tool runs
a command on a node, the fake hands it on as the real tool would, so a test sees what a node
would run: ssh joins its remote words with spaces and runs them with `sh -c`; srun execs its
command (after its options, or after `--`); docker run parses its options as docker does and
runs the command under the real `env` with the `-e` variables; sbatch runs the script with bash.
On the "node" the engine programs (vllm, trtllm-serve, python3 -m sglang..., routers; see
fakebin/node/) are shims that exec the simulated engine on the host and port found in their
argv, so readiness, the canary and the sweep happen over real HTTP. "Nodes" are loopback addresses $FAKEBIN_NODE_PREFIX + 1, 2, … (the tests pick
a random 127.x.y. prefix, so fixed server ports never meet another program's).

Environment: FAKEBIN_LOG (argv log), FAKEBIN_STATE (folder for container and job state),
FAKEBIN_PYTHON (interpreter with infermatrix), FAKEBIN_SIM_RECIPE, FAKEBIN_CATALOG_ROOT,
FAKEBIN_SIM_PORTS (ports that get the simulator; others a stub that only answers health,
metrics and a canary; unset: every server is a simulator), FAKEBIN_GPUS (nvidia-smi rows).
"""

from __future__ import annotations

import http.server
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

STATE = Path(os.environ.get("FAKEBIN_STATE", "/tmp/fakebin-state"))
PREFIX = os.environ.get("FAKEBIN_NODE_PREFIX", "127.0.0.")


def node(i: int) -> str:
    return f"{PREFIX}{i + 1}"


def record(tool: str, argv: list[str]) -> None:
    line = json.dumps({"tool": tool, "argv": argv, "cwd": os.getcwd(),
                       "env": {k: v for k, v in os.environ.items() if k.startswith("IMXTEST_")}})
    with open(os.environ["FAKEBIN_LOG"], "a") as fh:
        fh.write(line + "\n")


def flag(argv: list[str], name: str) -> str | None:
    for i, tok in enumerate(argv):
        if tok == name and i + 1 < len(argv):
            return argv[i + 1]
        if tok.startswith(name + "="):
            return tok.split("=", 1)[1]
    return None


def config_port(argv: list[str]) -> tuple[str | None, str | None]:
    """trtllm-serve disaggregated -c server_config.yaml: host and port live in the file."""
    path = flag(argv, "-c") or flag(argv, "--config")
    if not path or not Path(path).is_file():
        return None, None
    import yaml

    data = yaml.safe_load(Path(path).read_text()) or {}
    return (str(data["hostname"]) if data.get("hostname") else None,
            str(data["port"]) if data.get("port") else None)


NODE_BIN = Path(__file__).resolve().parent / "node"
# python -m MODULE commands that are servers (the rest run the real interpreter)
SERVER_MODULES = {"sglang.launch_server", "sglang_router.launch_router"}


def node_env(host: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command run on ``host``: the engine shims first on PATH."""
    return {**os.environ, **(extra or {}), "FAKEBIN_NODE": host,
            "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def node_program(argv: list[str]) -> None:
    """An engine program on a node (a shim in fakebin/node): become the server it describes."""
    name = argv[0]
    if name == "trtllm-llmapi-launch":  # the MPI wrapper runs its command
        os.execvp(argv[1], argv[1:])
    if name in ("python", "python3") and not (argv[1:2] == ["-m"] and argv[2:3]
                                              and argv[2] in SERVER_MODULES):
        py = os.environ["FAKEBIN_PYTHON"]
        os.execv(py, [py, *argv[1:]])
    exec_server(argv, os.environ.get("FAKEBIN_NODE", "127.0.0.1"))


def exec_server(argv: list[str], node: str) -> None:
    """Become the server the command describes: sim, stub, or (headless rank) a sleeper."""
    host, port = flag(argv, "--host"), flag(argv, "--port")
    if "disaggregated" in argv:
        host, port = config_port(argv)
    headless = "--headless" in argv or (flag(argv, "--node-rank") not in (None, "0"))
    if port is None or headless:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            time.sleep(3600)
    host = node if host in (None, "0.0.0.0") else host
    sim_ports = os.environ.get("FAKEBIN_SIM_PORTS")
    if sim_ports is not None and port not in sim_ports.split(","):
        stub(host, int(port))
        return
    py = os.environ.get("FAKEBIN_PYTHON", sys.executable)
    served = flag(argv, "--served-model-name") or os.environ.get("FAKEBIN_SERVED_MODEL")
    cmd = [py, "-m", "infermatrix.sim", "serve", "--recipe", os.environ["FAKEBIN_SIM_RECIPE"],
           "--catalog-root", os.environ["FAKEBIN_CATALOG_ROOT"], "--host", host, "--port", port,
           "--time-scale", os.environ.get("FAKEBIN_TIME_SCALE", "20"),
           *(["--served-model-name", served] if served else [])]
    sys.stdout.flush()
    os.execv(py, cmd)


def stub(host: str, port: int) -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/metrics":
                self._send(200, b"vllm:num_requests_running 0\n", "text/plain")
            else:
                self._send(200 if self.path == "/health" else 404, b"{}")

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send(200, json.dumps({"choices": [{"text": "stub"}]}).encode())

        def log_message(self, *args: object) -> None:
            pass

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    http.server.ThreadingHTTPServer((host, port), Handler).serve_forever()


# --------------------------------------------------------------------------- docker

DOCKER_VALUE_OPTS = {"--name", "--gpus", "--shm-size", "--network", "--ipc", "-v", "--volume",
                     "-e", "--env", "-w", "--workdir", "--label", "--device", "--entrypoint",
                     "--ulimit", "--cap-add", "--security-opt", "--group-add", "-u", "--user"}


def docker(argv: list[str]) -> None:
    cmd, rest = argv[0], argv[1:]
    containers = STATE / "containers"
    containers.mkdir(parents=True, exist_ok=True)
    if cmd == "run":  # options until the image (or '--'), as docker's flag parser reads them
        i, name, env = 0, None, []
        while i < len(rest) and rest[i].startswith("-"):
            opt = rest[i]
            if opt == "--":
                i += 1
                break
            if opt in DOCKER_VALUE_OPTS:
                if opt == "--name":
                    name = rest[i + 1]
                if opt in ("-e", "--env"):
                    value = rest[i + 1]
                    if "=" in value or value in os.environ:  # -e NAME passes this one through
                        env.append(value if "=" in value else f"{value}={os.environ[value]}")
                i += 2
            else:
                i += 1
        command = rest[i + 1:]  # rest[i] is the image
        if name:
            (containers / name).write_text(str(os.getpid()))
        workdir = flag(rest[:i], "-w")
        if workdir:
            os.chdir(workdir)
        os.execvpe("env", ["env", "--", *env, *command], node_env("127.0.0.1"))
    elif cmd == "rm":
        for name in [a for a in rest if not a.startswith("-")]:
            path = containers / name
            if path.exists():
                kill_group(int(path.read_text()))
                path.unlink()
            else:
                print(f"Error response from daemon: No such container: {name}", file=sys.stderr)
    elif cmd == "ps":
        for path in sorted(containers.iterdir()):
            print(path.name)


def kill_group(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.3)


# --------------------------------------------------------------------------- slurm

SRUN_VALUE_OPTS = {"--nodes", "-N", "--ntasks", "-n", "--ntasks-per-node", "--nodelist", "-w",
                   "--mpi", "--jobid", "--job-name", "-J"}


def next_job_id() -> str:
    counter = STATE / "next-job-id"
    STATE.mkdir(parents=True, exist_ok=True)
    n = int(counter.read_text()) if counter.exists() else 1000
    counter.write_text(str(n + 1))
    return str(n)


def salloc(argv: list[str]) -> None:
    jobid = next_job_id()
    (STATE / "jobs").mkdir(parents=True, exist_ok=True)
    (STATE / "jobs" / jobid).write_text("")
    print(f"salloc: Granted job allocation {jobid}", file=sys.stderr)
    print("salloc: Waiting for resource configuration", file=sys.stderr)
    print(f"salloc: Nodes {node(0)} are ready for job",
          file=sys.stderr)


def srun(argv: list[str]) -> None:
    """Options until the command (or '--'), then the command runs on the (first) node."""
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i += 2 if argv[i] in SRUN_VALUE_OPTS else 1
    opts, command = argv[:i], argv[i + 1:] if argv[i:i + 1] == ["--"] else argv[i:]
    host = (flag(opts, "--nodelist") or flag(opts, "-w") or node(0)).split(",")[0]
    workdir = flag(opts, "--container-workdir") or flag(opts, "--chdir")
    if workdir:
        os.chdir(workdir)
    os.execvpe(command[0], command, node_env(host))


def sbatch(argv: list[str]) -> None:
    script = Path(argv[-1])
    opts = {}
    for line in script.read_text().splitlines():
        if line.startswith("#SBATCH "):
            key, _, value = line[len("#SBATCH "):].partition("=")
            opts[key] = "".join(shlex.split(value))  # sbatch drops the double quotes
    nodes = int(opts.get("--nodes", "1"))
    jobid = next_job_id()
    out = opts.get("--output", f"slurm-{jobid}.out").replace("%j", jobid)
    env = {**os.environ, "SLURM_JOB_ID": jobid,
           "SLURM_JOB_NODELIST": ",".join(node(i) for i in range(nodes))}
    with open(out, "w") as log:
        proc = subprocess.Popen(["bash", str(script)], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    (STATE / "jobs").mkdir(parents=True, exist_ok=True)
    (STATE / "jobs" / jobid).write_text(str(proc.pid))
    print(jobid)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def squeue(argv: list[str]) -> None:
    jobid = flag(argv, "-j")
    path = STATE / "jobs" / str(jobid)
    if not path.exists():
        return
    pid = path.read_text().strip()
    if not pid or alive(int(pid)):
        print("RUNNING" if flag(argv, "-o") == "%T" else node(0))


def scancel(argv: list[str]) -> None:
    for jobid in [a for a in argv if not a.startswith("-")]:
        path = STATE / "jobs" / jobid
        if path.exists():
            pid = path.read_text().strip()
            if pid:
                kill_group(int(pid))
            path.unlink()


def scontrol(argv: list[str]) -> None:
    if argv[:2] == ["show", "hostnames"]:
        print("\n".join(argv[2].split(",")))


# --------------------------------------------------------------------------- ssh, nvidia-smi

SSH_VALUE_OPTS = {"-o", "-l", "-p", "-i", "-F", "-J"}


def ssh(argv: list[str]) -> None:
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i += 2 if argv[i] in SSH_VALUE_OPTS else 1
    if argv[i:i + 1] == ["--"]:  # ssh OPTIONS -- HOST COMMAND
        i += 1
    host = argv[i]
    remote = " ".join(argv[i + 1:])  # as ssh does: the words joined, run by the remote shell
    try:
        os.setsid()  # sshd starts each command in a session of its own
    except OSError:
        pass  # already a session leader
    os.execve("/bin/sh", ["sh", "-c", remote], node_env(host))


def nvidia_smi(argv: list[str]) -> None:
    interval = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("-lms=")), None)
    gpus = int(os.environ.get("FAKEBIN_GPUS", "2"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        for g in range(gpus):
            print(f"{g}, {300 + 50 * g:.2f}, 87, 70000, 1980", flush=True)
        if interval is None:
            return
        time.sleep(interval / 1000)


TOOLS = {"docker": docker, "salloc": salloc, "srun": srun, "sbatch": sbatch, "squeue": squeue,
         "scancel": scancel, "scontrol": scontrol, "ssh": ssh, "nvidia-smi": nvidia_smi}

if __name__ == "__main__":
    tool, args = sys.argv[1], sys.argv[2:]
    if tool == "_node":  # an engine program on a node
        node_program(args)
    else:
        record(tool, args)
        TOOLS[tool](args)
