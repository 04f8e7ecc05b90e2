"""Every subcommand with no arguments, --help, a missing path, an empty folder, and outside
GitHub (no GITHUB_* variables): an answer or a one-line error, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from bounded import REPO, call, mini_catalog

from infermatrix.cli import OWN, PASSTHROUGH

COMMANDS = sorted([*OWN, *PASSTHROUGH])
VARIANTS = ("no-args", "help", "missing-path", "empty-folder")
GITHUB_VARIABLES = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "GITHUB_SHA",
                    "RUNNER_ENVIRONMENT", "INFERMATRIX_ENGINE")


@pytest.fixture
def outside_github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch catalog as the working folder (a command's defaults write there), no GitHub."""
    for name in GITHUB_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    root = mini_catalog(tmp_path / "catalog")
    monkeypatch.chdir(root)
    return tmp_path


def _argv(variant: str, tmp_path: Path) -> list[str]:
    if variant == "help":
        return ["--help"]
    if variant == "missing-path":
        return [str(tmp_path / "no" / "such" / "path")]
    if variant == "empty-folder":
        (tmp_path / "empty").mkdir(exist_ok=True)
        return [str(tmp_path / "empty")]
    return []


def _no_traceback(rc: int, err: str) -> None:
    assert "Traceback" not in err, err
    assert rc in (0, 1, 2), rc
    if rc == 2 and err.strip():  # an error is one line (argparse: usage, then one line)
        last = err.strip().splitlines()[-1]
        assert last and not last.startswith(" "), err


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("command", COMMANDS)
def test_subcommand(outside_github: Path, command: str, variant: str) -> None:
    rc, out, err = call([command, *_argv(variant, outside_github)], seconds=120)
    _no_traceback(rc, err)
    if variant == "help":
        assert rc == 0 and "usage" in (out + err).lower()


def test_top_level(outside_github: Path) -> None:
    for argv in ([], ["--help"], ["--version"], ["no-such-command"]):
        rc, _, err = call(argv)
        _no_traceback(rc, err)


def test_plan_github_format_outside_github(outside_github: Path) -> None:
    """The README's command: outside GitHub the outputs are printed."""
    rc, out, err = call(["plan", "smoke", "--format", "github", "--root", str(REPO)])
    assert rc == 0, err
    assert out.startswith("jobs_total<<EOF_") and "shards<<EOF_" in out
    assert (outside_github / "catalog" / "plan" / "shard-0.json").is_file()


@pytest.mark.parametrize("command", ["validate", "plan smoke", "sweep", "run", "catalog",
                                     "capacity --recipe x"])
@pytest.mark.parametrize("root", ["missing", "empty"])
def test_root_missing_or_empty(outside_github: Path, command: str, root: str) -> None:
    folder = outside_github / root
    if root == "empty":
        folder.mkdir()
    rc, out, err = call([*command.split(), "--root", str(folder)])
    _no_traceback(rc, err)
    assert rc == 2 and "ok:" not in out, (out, err)


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_output_dir_that_cannot_exist(outside_github: Path, command: str) -> None:
    """--output-dir below a file: one line, exit 2, before any server starts."""
    (outside_github / "a-file").write_text("")
    job = (["--recipe", "llama-3.1-70b-instruct/h200-vllm-fp8", "--workload", "smoke-1k-128",
            "--runner-label", "h200-dgx", "--concurrency", "1"] if command == "run" else ["smoke"])
    rc, _, err = call([command, *job, "--root", str(REPO), "--virtual", "--output-dir",
                       str(outside_github / "a-file" / "results")])
    assert rc == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith("cannot create the folder: Not a directory")
