"""`sweep --serve` chooses what serves; `sweep --engine` filters by engine name (issue 31: one
flag meant both). The older `--engine sim|real|auto` still works, with a note."""

from __future__ import annotations

import pytest

from infermatrix.cli import build_parser
from infermatrix.commands.sweep import split_engine_flags
from infermatrix.errors import UsageError


def parsed(*argv: str):  # noqa: ANN202
    args = build_parser().parse_args(["sweep", *argv])
    split_engine_flags(args)
    return args


def test_serve_and_engine_filter_apart(capsys) -> None:
    args = parsed("--serve", "real", "--engine", "vllm", "--engine", "SGLang")
    assert (args.engine_mode, args.engine) == ("real", ["vllm", "SGLang"])
    assert capsys.readouterr().err == ""


def test_default_serves_the_simulator() -> None:
    args = parsed("--engine", "trtllm")
    assert (args.engine_mode, args.engine) == ("sim", ["trtllm"])


def test_old_spelling_still_chooses_what_serves_with_a_note(capsys) -> None:
    args = parsed("--engine", "auto")
    assert (args.engine_mode, args.engine) == ("auto", [])
    assert "spell it --serve auto" in capsys.readouterr().err


def test_conflicting_choices_are_refused() -> None:
    with pytest.raises(UsageError, match="--serve: choose one of auto, real, sim"):
        parsed("--serve", "real", "--engine", "sim")


def test_help_tells_the_two_apart(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sweep", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--serve {auto,real,sim}" in out
    assert "what serves the jobs is --serve" in out
