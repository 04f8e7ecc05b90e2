"""Which steps that prefill replay piecewise graphs, engine by engine (prefill_graphs.py), and
the step model's response: a step without them takes at least layers × the eager dispatch."""

from __future__ import annotations

import math
from typing import Any

import pytest
from sim_helpers import catalog, config

from infermatrix.sim import SimConfig
from infermatrix.sim.engine_args import engine_knobs
from infermatrix.sim.operators import StepModel
from infermatrix.sim.prefill_graphs import graphed_prefill_tokens
from infermatrix.sim.tables import default_tables

R1 = "deepseek-r1-0528"


def _r1(hardware: str = "B200", **kw: Any) -> SimConfig:
    kw.setdefault("engine", "sglang")
    kw.setdefault("engine_version", "0.5.12")
    return config(hardware, model=R1, precision="fp8", tp=8, **kw)


def _graphed(cfg: SimConfig) -> float:
    return graphed_prefill_tokens(default_tables().engines[cfg.engine].prefill_graphs, cfg)  # type: ignore[index]


def _prefill_ms(cfg: SimConfig, tokens: int) -> float:
    """One step prefilling ``tokens`` of a new prompt, alone."""
    return StepModel(cfg).step_time(tokens, 1, tokens, tokens * (tokens + 1) / 2) * 1000


def _floor_ms(cfg: SimConfig) -> float:
    return cfg.layers * StepModel(cfg).eager_layer_s * 1000


def test_sglang_mla_prefill_graphs_stop_at_2048_tokens() -> None:
    """MLA-backend models capture piecewise graphs up to 2,048 tokens by default (SGLang's
    server_args.py _handle_gpu_memory_settings); a larger step launches every layer from the
    host."""
    cfg = _r1()
    assert _graphed(cfg) == 2048 and cfg.summary()["prefill_graph_tokens"] == 2048
    floor = _floor_ms(cfg)
    assert _prefill_ms(cfg, 2048) < 0.8 * floor  # graphed: the GPU's time alone
    assert _prefill_ms(cfg, 2049) >= floor
    # a GQA model's graphs cover the whole step budget (the chunked prefill size)
    assert _graphed(config("B200", engine="sglang", engine_version="0.5.12")) == math.inf
    # --piecewise-cuda-graph-max-tokens sets the largest captured step
    assert _graphed(_r1(prefill_graph_max_tokens=4096)) == 4096


@pytest.mark.parametrize("hardware", ["MI300X", "MI355X"])
def test_sglang_prefills_eagerly_on_amd(hardware: str) -> None:
    """SGLang turns piecewise graphs off on non-CUDA hardware (is_hip), even when asked; AMD's
    eager dispatch is the NVIDIA figure taken as a lower bound, so the step pays it."""
    cfg = _r1(hardware)
    assert _graphed(cfg) == 0
    assert _graphed(_r1(hardware, prefill_graphs=True)) == 0
    assert _floor_ms(cfg) == pytest.approx(_floor_ms(_r1()))
    assert _prefill_ms(cfg, 100) == pytest.approx(_floor_ms(cfg))


@pytest.mark.parametrize("feature", [{"attention_dp": True, "dp": 8}, {"moe_a2a": True},
                                     {"pp": 2, "tp": 4}])
def test_sglang_turns_prefill_graphs_off_under_dp_attention_a2a_and_pp(
        feature: dict[str, Any]) -> None:
    kw = {"tp": 8, **feature}
    cfg = config("H200", model=R1, precision="fp8", engine="sglang", engine_version="0.5.12", **kw)
    assert _graphed(cfg) == 0
    assert _prefill_ms(cfg, 100) >= _floor_ms(cfg)
    assert _prefill_ms(_r1("H200"), 100) < 0.5 * _floor_ms(cfg)  # without it: graphed


def test_sglang_prefill_graphs_by_version_speculative_decoding_and_sparse_attention() -> None:
    """Off before 0.5.10 unless asked; off under speculative decoding before 0.5.11 (PR
    #22128); off for DeepSeek sparse attention models before 0.5.13 (PR #23351)."""
    assert _graphed(_r1(engine_version="0.5.9")) == 0
    assert _graphed(_r1(engine_version="0.5.9", prefill_graphs=True)) == 2048
    assert _graphed(_r1(engine_version="unstated")) == 2048  # unknown build: the newest rules
    assert _graphed(_r1(prefill_graphs=False)) == 0  # --disable-piecewise-cuda-graph
    assert _graphed(_r1(engine_version="0.5.10", spec_draft_tokens=3)) == 0
    assert _graphed(_r1(engine_version="0.5.11", spec_draft_tokens=3)) == 2048

    def dsa(version: str) -> SimConfig:
        return config("B200", model="deepseek-v3.2", precision="fp8", tp=8, engine="sglang",
                      engine_version=version)

    assert _graphed(dsa("0.5.12")) == 0
    assert _graphed(dsa("0.5.13")) == 2048


def test_trtllm_context_and_mixed_steps_run_eagerly_unless_piecewise_graphs_are_on() -> None:
    """TensorRT-LLM's CUDA graphs capture generation-only batches; context and mixed steps
    replay graphs only with torch_compile_config.enable_piecewise_cuda_graph."""
    cfg = _r1(engine="trtllm", engine_version="1.2.0rc6.post2")
    assert _graphed(cfg) == 0
    floor = _floor_ms(cfg)
    assert _prefill_ms(cfg, 100) == pytest.approx(floor)
    # a mixed step: 8 decoders and a 100-token chunk
    mixed = StepModel(cfg).step_time(108, 9, 8 * 1000 + 100, 8 * 1000 + 5050) * 1000
    assert mixed >= floor
    on = _r1(engine="trtllm", engine_version="1.2.0rc6.post2", prefill_graphs=True)
    assert _graphed(on) == math.inf and _prefill_ms(on, 100) < 0.5 * floor
    # decode steps keep their generation-only graphs
    assert StepModel(cfg).step_time(8, 8, 8000, 8000) * 1000 < 0.5 * floor


def test_vllm_prefill_steps_stay_graphed() -> None:
    cfg = _r1(engine="vllm", engine_version="0.11.0")
    assert _graphed(cfg) == math.inf


def test_recipe_flags_switch_prefill_graphs() -> None:
    cat = catalog()
    recipe = next(r for r in cat.recipes.values() if r.engine.name == "sglang")
    pool = recipe.topology.pools[0]

    def knobs(args: dict[str, Any], cfg: dict[str, Any] | None = None) -> dict[str, Any]:
        return engine_knobs(recipe, pool.model_copy(update={"args": args, "config": cfg or {}}), {})

    assert knobs({"--disable-piecewise-cuda-graph": True})["prefill_graphs"] is False
    assert knobs({"--enable-torch-compile": True})["prefill_graphs"] is False  # full compile
    assert knobs({"--enable-piecewise-cuda-graph": True})["prefill_graphs"] is True
    assert knobs({"--piecewise-cuda-graph-max-tokens": 4096})["prefill_graph_max_tokens"] == 4096
    trt = knobs({}, {"torch_compile_config": {"enable_piecewise_cuda_graph": True}})
    assert trt["prefill_graphs"] is True
    assert "prefill_graphs" not in knobs({"--disable-piecewise-cuda-graph": False})
