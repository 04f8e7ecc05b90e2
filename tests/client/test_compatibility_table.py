"""docs/compatibility.md against `infermatrix bench --help`: a flag the table calls supported
(same, or an alias) must be one the command accepts, and the alias's target too."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
ROW = re.compile(r"^\| `(--[a-z0-9-]+)` \|([^|]*)\|([^|]*)\|([^|]*)\| ([^|]+?) \|")


def table() -> dict[str, str]:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = m.group(5).strip()
    return rows


def help_flags() -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "infermatrix.cli", "bench", "--help"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    return set(re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", out))


def test_every_supported_flag_is_accepted() -> None:
    rows = table()
    assert len(rows) > 150  # vLLM's, SGLang's and InferenceX's flags
    accepted = help_flags()
    missing = []
    for flag, ours in rows.items():
        if ours == "same" or ours.startswith("alias of"):
            missing += [flag] if flag not in accepted else []
            target = re.findall(r"`(--[a-z0-9-]+)`", ours)
            missing += [t for t in target if t not in accepted]
        else:
            assert ours == "not supported", f"{flag}: unknown status {ours!r}"
    assert missing == [], f"the table calls these supported, --help lacks them: {missing}"


def test_every_flag_inferencex_passes_is_supported() -> None:
    """benchmark_lib.sh's run_benchmark_serving flags (and its optional ones)."""
    passed = ["--model", "--backend", "--base-url", "--dataset-name", "--random-input-len",
              "--random-output-len", "--random-range-ratio", "--num-prompts",
              "--max-concurrency", "--request-rate", "--ignore-eos", "--save-result",
              "--num-warmups", "--percentile-metrics", "--result-dir", "--result-filename",
              "--endpoint", "--use-chat-template", "--dsv4", "--trust-remote-code",
              "--tokenizer", "--tokenizer-mode", "--profile"]  # fmt: skip
    rows = table()
    assert [f for f in passed if rows.get(f) != "same"] == []
