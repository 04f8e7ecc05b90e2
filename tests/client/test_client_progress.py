"""`bench` progress (issue 31): a line with an ETA at a steady cadence where stderr is a log,
nothing with --disable-tqdm."""

from __future__ import annotations

import re

import pytest

from infermatrix.client import progress as client_progress


def test_bench_prints_lines_with_an_eta(serve, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from infermatrix.client.cli import main

    monkeypatch.setattr(client_progress, "INTERVAL_S", 0.5)
    srv = serve(tpot=0.05)
    code = main(["--base-url", srv.base_url, "--num-prompts", "8", "--max-concurrency", "1",
                 "--random-input-len", "4", "--random-output-len", "8", "--tokenizer", "words"])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("[bench]")]
    assert len(lines) >= 3, err
    assert re.fullmatch(r"\[bench\] \d/8 requests \(\d+%\), [\d:]+ elapsed, ETA \S+, 0 failed",
                        lines[-1]), lines[-1]
    assert any("ETA ?" not in ln for ln in lines)


def test_bench_progress_off_with_disable_tqdm(serve, monkeypatch: pytest.MonkeyPatch,
                                              capsys) -> None:
    from infermatrix.client.cli import main

    monkeypatch.setattr(client_progress, "INTERVAL_S", 0.2)
    srv = serve(tpot=0.05)
    assert main(["--base-url", srv.base_url, "--num-prompts", "4", "--max-concurrency", "1",
                 "--random-input-len", "4", "--random-output-len", "8", "--tokenizer", "words",
                 "--disable-tqdm"]) == 0
    assert "[bench]" not in capsys.readouterr().err




def test_multi_turn_counts_the_window(serve, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Closed-loop sessions have no request count up front: the window's seconds, with an ETA,
    and the requests so far."""
    from infermatrix.client.cli import main

    monkeypatch.setattr(client_progress, "INTERVAL_S", 0.3)
    srv = serve(tpot=0.01)
    code = main(["--base-url", srv.base_url, "--backend", "openai-chat", "--dataset-name",
                 "multi-turn", "--max-concurrency", "2", "--session-duration", "1.5",
                 "--session-warmup", "0.5", "--session-dist", "turns=3", "--session-dist",
                 "user_tokens=4", "--session-dist", "output_tokens=4", "--session-dist",
                 "system_prompt_tokens=4", "--session-dist", "tool_delay_s=0",
                 "--tokenizer", "words"])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("[bench]")]
    assert lines, err
    assert all(re.fullmatch(r"\[bench\] \d/2 s of the window \(\d+%\), [\d:]+ elapsed, "
                            r"ETA \S+, \d+ requests, \d+ failed", ln) for ln in lines), lines
