"""A server reporting a usage count no request can have (10**400, negative) is not believed:
the output is re-tokenized, the level's result is written, nothing overflows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infermatrix.client import run_benchmark_sync
from infermatrix.client.backends import decode_chunk
from infermatrix.client.result import write_result


@pytest.mark.parametrize("count", [10**400, 2**63, -1, True, "12", 1.5])
def test_impossible_usage_count_is_ignored(count: Any) -> None:
    chunk = decode_chunk({"choices": [], "usage": {"completion_tokens": count,
                                                   "prompt_tokens": count}})
    assert chunk.completion_tokens is None and chunk.prompt_tokens is None


def test_benchmark_against_a_server_lying_beyond_float_range(serve: Any, make_cfg: Any,
                                                               tmp_path: Path) -> None:
    srv = serve(usage_offset=10**400)
    result = run_benchmark_sync(make_cfg(srv))
    assert result["completed"] == 4 and result["output_tokens_from_usage"] == 0
    assert result["total_output_tokens"] == 4 * 8  # re-tokenized
    path = write_result(result, tmp_path / "conc-4.json")
    assert json.loads(path.read_text())["completed"] == 4
