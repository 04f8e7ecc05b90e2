"""Flags of vLLM's and SGLang's clients that `bench` does not take get their reason from
docs/compatibility.md, not argparse's "unrecognized arguments" (issue 31)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from infermatrix.client.cli import build_parser
from infermatrix.client.unsupported import UNSUPPORTED

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
ROW = re.compile(r"^\| `(--[a-z0-9-]+)` \|[^|]*\|[^|]*\|[^|]*\| not supported \| ([^|]+?) \|")


def doc_reasons() -> dict[str, str]:
    return {m.group(1): m.group(2) for line in DOC.read_text(encoding="utf-8").splitlines()
            if (m := ROW.match(line))}


def test_the_client_knows_every_reason_the_table_gives() -> None:
    assert len(doc_reasons()) > 100
    assert doc_reasons() == UNSUPPORTED


@pytest.mark.parametrize("flag", sorted(UNSUPPORTED))
def test_each_unsupported_flag_prints_its_reason(flag: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--num-prompts", "1", flag, "1"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (f"infermatrix bench: error: {flag} is not supported: "
                                       f"{UNSUPPORTED[flag]} (docs/compatibility.md)\n")


@pytest.mark.parametrize("argv", [["--top-p", "0.9"], ["--random-prefix-len=64"],
                                  ["--append-result"], ["--ready-check-timeout-sec", "600"]])
def test_the_issues_flags_from_the_command_line(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "infermatrix.cli", "bench", *argv],
                          capture_output=True, text=True, timeout=120, check=False)
    flag = argv[0].split("=")[0]
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"infermatrix bench: error: {flag} is not supported: "
                                        f"{UNSUPPORTED[flag]} (docs/compatibility.md)"]


def test_an_unknown_flag_keeps_argparses_message(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--no-such-flag"])
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
