"""The fake cluster tools (tests/fakebin) hand their argument vectors on as the real tools do, so
a test sees what a node would run: ssh joins its remote words with spaces and runs them with
`sh -c`; srun execs its command; docker run reads its options as docker does and runs the
command under the real `env`. A payload the real tools would run, the fakes run too (the old
fake ssh dropped `env NAME=VALUE` words and so hid GNU env's `-S`)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infermatrix.cli import main

PAYLOAD_KEY = "-Ssh -c 'touch PWNED' _"


def _tool(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_fake_ssh_runs_the_joined_words_in_a_shell(fake_cluster: Any, tmp_path: Path) -> None:
    out = _tool(["ssh", "-o", "BatchMode=yes", "--", "node-1", "echo", "$((1+2))", "'a  b'"], tmp_path)
    assert out.stdout == "3 a  b\n", out.stderr
    # what a node would run: GNU env reads the name as its -S option and runs the payload ...
    _tool(["ssh", "--", "node-1", f"exec env {PAYLOAD_KEY!r}=1 true"], tmp_path)
    assert (tmp_path / "PWNED").exists()
    (tmp_path / "PWNED").unlink()
    # ... unless `env --` ends its options: the whole word is then an assignment
    out = _tool(["ssh", "--", "node-1", f"exec env -- {PAYLOAD_KEY!r}=1 sh -c 'echo ok'"], tmp_path)
    assert out.stdout == "ok\n" and not (tmp_path / "PWNED").exists(), out.stderr


def test_fake_srun_and_docker_run_their_command(fake_cluster: Any, tmp_path: Path) -> None:
    out = _tool(["srun", "--nodes=1", "--overlap", "--", "sh", "-c", "echo $0", "srun-ok"], tmp_path)
    assert out.stdout == "srun-ok\n", out.stderr
    out = _tool(["docker", "run", "--name", "c1", "-e", "A=$(touch PWNED)", "--", "img:1",
                 "sh", "-c", 'echo "$A"'], tmp_path)
    assert out.stdout == "$(touch PWNED)\n" and not (tmp_path / "PWNED").exists(), out.stderr
    # docker reads options up to the image: an "image" starting with '-' is an option
    out = _tool(["docker", "run", "--name", "c2", "-e", "B=1", "--privileged", "img:1",
                 "sh", "-c", 'echo "$B"'], tmp_path)
    assert out.stdout == "1\n", out.stderr


def test_recipe_env_name_never_reaches_a_node(fake_cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's attack end to end: a recipe env key that GNU env reads as `-S`, on the ssh
    fleet. `run` stops at load with one line, before any tool is called, and nothing runs."""
    recipe = "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d"
    path = fake_cluster.root / "benchmarks" / f"{recipe}.yaml"
    data = yaml.safe_load(path.read_text())
    data["env"] = {**data.get("env", {}), PAYLOAD_KEY: 1}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    rc = main(["run", "--root", str(fake_cluster.root), "--output-dir", str(fake_cluster.out),
               "--recipe", recipe, "--workload", "smoke-1k-128", "--runner-label", "ascend-a3",
               "--concurrency", "1", "--backend", "ssh", "--ready-timeout", "60"])
    err = capsys.readouterr().err
    assert rc == 2 and f"benchmarks/{recipe}.yaml:" in err and "Traceback" not in err, err
    assert fake_cluster.calls("ssh") == []
    assert not list(fake_cluster.root.rglob("PWNED")) and not Path("PWNED").exists()
