"""`infermatrix capacity --workload NAME`: sessions and SLO tiers come from an agentic workload
of the catalog, flags given override them; end to end against the simulated engine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from agentic_servers import REPO

from infermatrix.capacity.tiers import SloTier
from infermatrix.catalog.loader import load_catalog
from infermatrix.commands.capacity import apply_workload, main, parser

RECIPE = "deepseek-v4-pro/b300-trtllm-nvfp4-1ctx-1gen"  # AA-AgentPerf's B300 deployment, 8 GPUs

TRACE_WORKLOAD = """
replay-examples:
  kind: agentic
  sessions: {source: trace, path: examples/agentic/manifest.json, warmup_s: 2, mid_session: false}
  max_error_rate: 0.2
  endpoint: completions
  slo_tiers:
    - {name: FAST, min_output_speed: 90, max_ttft_s: 0.5}
"""


@pytest.fixture
def catalog_with_trace_workload(catalog_copy: Path) -> Path:
    shutil.copytree(REPO / "examples" / "agentic", catalog_copy / "examples" / "agentic")
    path = catalog_copy / "matrix" / "workloads.yaml"
    path.write_text(path.read_text() + TRACE_WORKLOAD)
    return catalog_copy


def test_workload_fills_unset_flags(catalog_with_trace_workload: Path) -> None:
    root = catalog_with_trace_workload
    args = parser().parse_args(["--catalog-root", str(root), "--workload", "replay-examples"])
    tiers = apply_workload(args, load_catalog(root))
    assert tiers == [SloTier(name="FAST", min_output_speed=90, max_ttft_s=0.5)]
    assert args.source == "trace"
    assert args.dataset_path == str(root.resolve() / "examples/agentic/manifest.json")
    assert (args.warmup, args.duration, args.no_mid_session) == (2.0, 120.0, True)
    assert (args.max_error_rate, args.backend) == (0.2, "vllm")  # the completions endpoint
    # flags given win over the workload
    args = parser().parse_args(
        [
            "--workload",
            "replay-examples",
            "--tier",
            "T=5:9",
            "--warmup",
            "0",
            "--max-error-rate",
            "0",
            "--backend",
            "vllm",
        ]
    )
    tiers = apply_workload(args, load_catalog(root))
    assert tiers == [SloTier(name="T", min_output_speed=5, max_ttft_s=9)]
    assert (args.warmup, args.max_error_rate, args.backend) == (0.0, 0.0, "vllm")


def test_synthetic_flags_override_single_distributions() -> None:
    args = parser().parse_args(["--workload", "agentic-coding", "--synthetic", "turns=3"])
    apply_workload(args, load_catalog())
    names = [item.split("=", 1)[0] for item in args.synthetic]
    assert names.count("turns") == 1 and args.synthetic[-1] == "turns=3"
    assert "system_prompt_tokens=5000" in args.synthetic
    assert (args.duration, args.warmup, args.max_context_tokens) == (300.0, 60.0, 128000)


@pytest.mark.parametrize(
    ("workload", "msg"),
    [("smoke-1k-128", "is fixed, not agentic"), ("nope", "unknown workload 'nope'")],
)
def test_workload_errors_are_one_line(
    workload: str, msg: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--recipe", RECIPE, "--workload", workload]) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1, err


def test_capacity_of_the_catalog_workload_on_the_simulated_engine(tmp_path: Path) -> None:
    out = tmp_path / "cap.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "infermatrix.cli",
            "capacity",
            "--recipe",
            RECIPE,
            "--workload",
            "agentic-coding",
            "--time-scale",
            "10",
            "--duration",
            "2",
            "--warmup",
            "0.5",
            "--max-concurrency",
            "2",
            "-o",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    # the tiers are the workload's, reported in the units the catalog gives them
    assert [t["tier"] for t in doc["tiers"]] == [
        {"name": "SLO20", "min_output_speed": 20.0, "max_ttft_s": 10.0},
        {"name": "SLO60", "min_output_speed": 60.0, "max_ttft_s": 5.0},
    ]
    assert "SLO20: " in r.stderr and "SLO60: " in r.stderr
    assert doc["infermatrix"]["workload"] == "agentic-coding"
    assert doc["infermatrix"]["recipe"] == RECIPE and doc["tiers"][0]["gpus"] == 8
    # the sessions are the workload's; --duration/--warmup given here override its 300/60 s
    assert doc["sessions"]["source"] == "synthetic"
    assert "turns=zipf:a=1.7,low=5,high=200" in doc["sessions"]["synthetic"]
    assert "output_tokens=lognormal:median=150,sigma=1.55,max=8192" in doc["sessions"]["synthetic"]
    s = doc["settings"]
    assert (s["duration_s"], s["warmup_s"], s["max_context_tokens"]) == (2.0, 0.5, 128000)
    assert doc["endpoint"].endswith("/v1/chat/completions")
    assert doc["affinity"] == "body disaggregated_params.conversation_id"  # from the recipe
    measured = [lv for lv in doc["levels"] if lv["completed"]]
    assert measured, doc["levels"]
    # every context starts with the workload's 5000-token shared system prompt
    assert all(lv["mean_input_tokens"] > 5000 for lv in measured)
