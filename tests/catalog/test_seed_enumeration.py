"""The seed documents themselves, read where they exist (../shared/seeds; CI has them): every
serving command and config file they publish has a golden case (which test_golden renders),
every published count matches the catalog, and the benchmark settings have workloads/sweeps.
A seed command with no recipe fails here."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from infermatrix.catalog.loader import Catalog, load_catalog

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "engines"))
from imx_seedtext import commands, export_pairs, normalise, yaml_blocks  # noqa: E402  (shared with test_golden)

CANDIDATES = [REPO.parent / "shared" / "seeds", Path("/work/shared/seeds")]
SEEDS = next((p for p in CANDIDATES if p.is_dir()), None)
GOLDEN = REPO / "tests" / "engines" / "golden"

pytestmark = pytest.mark.skipif(SEEDS is None, reason="seed documents (../shared/seeds) not present")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(REPO)


def goldens(seed: str) -> list[dict[str, Any]]:
    cases = [yaml.safe_load(p.read_text()) for p in sorted(GOLDEN.glob("*.yaml"))]
    return [c for c in cases if c["seed"] == seed]


def seed_text(name: str) -> str:
    assert SEEDS is not None
    return (SEEDS / name).read_text(encoding="utf-8")


SERVING_SEEDS = ["aa-agentperf-serving-configs.txt", "ascend-dsv32-pd-disagg.txt",
                 "inferencemax-readme.md"]


@pytest.mark.parametrize("seed", SERVING_SEEDS)
def test_every_seed_command_has_a_recipe(seed: str) -> None:
    published = set(commands(seed_text(seed)))
    assert published, f"no commands found in {seed}: has its format changed?"
    covered = {normalise(" ".join(p["command"].replace("\\\n", " ").split()))
               for case in goldens(seed) for p in case["processes"].values()}
    missing = published - covered
    assert not missing, f"{seed}: commands with no recipe/golden case:\n" + "\n".join(sorted(missing))


def published_env(text: str) -> set[tuple[str, str]]:
    """``export K=V`` lines, and the AA pages' ``# Worker environment`` comment blocks."""
    pairs = set(export_pairs(text))
    for block in re.findall(r"# Worker environment[^\n]*\n((?:#   [^\n]*\n)+)", text):
        pairs |= {tuple(p.split("=", 1)) for line in block.splitlines() for p in line[4:].split()}
    return pairs


@pytest.mark.parametrize("seed", SERVING_SEEDS)
def test_every_seed_environment_variable_is_rendered(seed: str) -> None:
    published = published_env(seed_text(seed))
    covered = {(k, str(v)) for case in goldens(seed) for p in case["processes"].values()
               for k, v in p.get("env", {}).items()}
    missing = published - covered
    assert not missing, f"{seed}: environment with no golden case: {sorted(missing)}"


def test_every_seed_config_file_has_a_recipe() -> None:
    seed = "aa-agentperf-serving-configs.txt"
    published = [(name, yaml.safe_load(text)) for name, text in yaml_blocks(seed_text(seed))]
    assert len(published) == 9  # three TensorRT-LLM configurations × gen/ctx/server
    covered = [(name, yaml.safe_load(text)) for case in goldens(seed)
               for files in case.get("files", {}).values() for name, text in files.items()]
    for name, data in published:
        assert (name, data) in covered, f"{seed}: a published {name} has no golden case"


def test_published_counts(catalog: Catalog) -> None:
    aa = seed_text("aa-agentperf-serving-configs.txt")
    shown = int(re.search(r"Showing (\d+) of \d+ configurations", aa).group(1))  # type: ignore[union-attr]
    tagged = [r for r in catalog.recipes.values() if "aa-agentperf" in r.tags]
    assert len(tagged) == shown == 6
    submitted = re.findall(r"Submitted by (.+)", aa)
    assert sorted(r.source.submitted_by for r in tagged) == sorted(submitted)
    imax = seed_text("inferencemax-readme.md")
    rows = re.findall(r"^\| (\S+) \| `([^`]+)` \| `([^`]+)` \|", imax, re.M)
    assert len(rows) == 9
    im = {(r.hardware, r.engine.image) for r in catalog.recipes.values() if "inferencemax" in r.tags}
    assert im == {(gpu, image) for gpu, _, image in rows}
    for gpu, checkpoint, _ in rows:  # vendor checkpoints are recorded as such
        assert any(r.hardware == gpu and (r.checkpoint or catalog.models[r.model].hf_id) == checkpoint
                   for r in catalog.recipes.values() if "inferencemax" in r.tags), (gpu, checkpoint)


def _flags(command: str) -> dict[str, str]:
    toks = shlex.split(command.replace("\\\n", " "))
    return {t: toks[i + 1] for i, t in enumerate(toks[:-1]) if t.startswith("--")}


def test_benchmark_settings_have_workloads_and_sweeps(catalog: Catalog) -> None:
    # Ascend: sglang.bench_serving random, exact lengths, prompts = concurrency
    text = seed_text("ascend-dsv32-pd-disagg.txt")
    runs = re.findall(r"python -m sglang\.bench_serving \\\n(?:.*\\\n)*.*", text)
    assert len(runs) == 3
    rid = "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d"
    for run in runs:
        f = _flags(run)
        conc = int(f["--max-concurrency"])
        wl = [w for w in catalog.workloads.values() if w.isl == int(f["--random-input-len"])
              and w.osl == int(f["--random-output-len"]) and w.range_ratio == float(f["--random-range-ratio"])
              and w.num_prompts(conc) == int(f["--num-prompts"])]
        assert wl, f"no workload for {f}"
        assert any(rid in e.recipes and conc in e.concurrency for s in catalog.sweeps.values()
                   for e in s.entries), f"no sweep runs {rid} at concurrency {conc}"
    # InferenceMAX: three shapes, CONC 4-64, range ratio 0.8, 10 × CONC prompts
    imax = seed_text("inferencemax-readme.md")
    shapes = {(int(a), int(b)) for a, b in re.findall(r"\((\d+), (\d+)\)", imax)}
    concs = [int(c) for c in re.search(r"`CONC` \| ([\d, ]+)", imax).group(1).split(",")]  # type: ignore[union-attr]
    ratio = float(re.search(r"`RANDOM_RANGE_RATIO` \| ([\d.]+)", imax).group(1))  # type: ignore[union-attr]
    sweep = catalog.sweeps["inferencemax"]
    (entry,) = sweep.entries
    assert entry.concurrency == concs and len(entry.recipes) == 9
    got = {(catalog.workloads[w].isl, catalog.workloads[w].osl) for w in entry.workloads}
    assert got == shapes
    for w in entry.workloads:
        assert catalog.workloads[w].range_ratio == ratio
        assert all(catalog.workloads[w].num_prompts(c) == 10 * c for c in concs)


def test_trtllm_slurm_parameters_are_family_axes(catalog: Catalog) -> None:
    text = seed_text("trtllm-disagg-slurm-scripts.md")
    section = text.split("It takes the following arguments in order:", 1)[1].split("##", 1)[0]
    params = re.findall(r"^- (\w+):", section, re.M)
    assert params[:12] == ["num_ctx_servers", "ctx_tp_size", "ctx_batch_size", "ctx_max_num_tokens",
                           "ctx_enable_attention_dp", "num_gen_servers", "gen_tp_size",
                           "gen_batch_size", "gen_max_num_tokens", "gen_enable_attention_dp",
                           "gen_gpu_memory_fraction", "concurrency_list"]
    family = yaml.safe_load((REPO / "benchmarks/deepseek-r1-0528/gb200-trtllm-nvfp4-slurm.yaml").read_text())
    for point in family["family"]["points"]:
        assert set(params[:11]) <= set(point)
    variants = [r for r in catalog.recipes if r.startswith("deepseek-r1-0528/gb200-trtllm-nvfp4-slurm/")]
    assert len(variants) == len(family["family"]["points"])
    # concurrency_list is the sweep's concurrency axis, for every variant
    swept = {rid for s in catalog.sweeps.values() for e in s.entries
             for rid in variants if any(re.fullmatch(p.replace("*", ".*"), rid) for p in e.recipes)}
    assert swept == set(variants)
