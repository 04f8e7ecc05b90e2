"""Decode graphs, eager steps, random placement on attention-DP ranks and prefill context
parallelism: what the recipe's engine args say, and the step model's response (virtual time,
no HTTP)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from sim_helpers import catalog, config

from infermatrix.sim import SimConfig
from infermatrix.sim.operators import StepModel
from infermatrix.sim.perf import PerfModel
from infermatrix.sim.rank_placement import expected_max_load
from infermatrix.sim.tables import default_tables

ASCEND = "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d"
DEP8 = "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep8"


def test_graph_limits_come_from_each_engines_args() -> None:
    cat = catalog()
    ascend = SimConfig.from_recipe(cat, ASCEND)
    assert ascend.graph_max_seqs == 4  # decode: cuda-graph-max-bs 4
    assert ascend.prefill is not None and ascend.prefill.graph_max_seqs == 0  # disable-cuda-graph
    assert ascend.prefill.attention_cp == 32  # attn-cp-size
    assert ascend.prefill.ep == 32  # moe-a2a-backend deepep: experts on EP over the TP group
    assert ascend.rank_dispatch == "random"  # SGLang PD: bootstrap_room % dp
    dep8 = SimConfig.from_recipe(cat, DEP8)
    assert dep8.graph_max_seqs == 192  # largest of cuda_graph_config.batch_sizes
    assert dep8.prefill is not None and dep8.prefill.graph_max_seqs == 0  # cuda_graph_config: null
    assert dep8.rank_dispatch == "balanced"
    assert SimConfig.from_recipe(cat, "tiny/cpu-vllm-bf16").graph_max_seqs == 0  # enforce-eager
    # vLLM counts capture sizes in tokens: with 3 draft tokens a sequence is 4 of them
    vllm = config("H200", graph_max_tokens=512, spec_draft_tokens=3)
    assert vllm.graph_max_seqs == 128
    assert config("H200").graph_max_seqs == -1  # the engine's default covers every batch


def test_random_placement_expected_max_load_is_exact() -> None:
    rng = np.random.default_rng(7)
    for n in (2, 8, 16, 40):
        draws = [np.bincount(rng.integers(0, 8, n), minlength=8).max() for _ in range(20000)]
        assert abs(expected_max_load(n, 8) - float(np.mean(draws))) < 0.05, n
    assert expected_max_load(16, 1) == 16
    # beyond the exact range the normal approximation stays above the balanced share
    assert 512 / 8 < expected_max_load(512, 8) < 512 / 8 + 30


def test_a_batch_above_the_captured_graphs_runs_eagerly() -> None:
    # 64 running requests over DP8 let a rank run 8, above its 4 captured sizes
    cfg = replace(SimConfig.from_recipe(catalog(), ASCEND), max_num_seqs=64)
    perf = PerfModel(cfg)
    graphed = perf.decode_time(8, 8 * 131072, 3)  # expected busiest rank 2.6 <= 4
    eager = perf.decode_time(16, 16 * 131072, 3)  # 4.2 > 4: every rank runs eagerly
    dispatch = default_tables().operator("eager_dispatch", cfg.hardware, cfg.vendor).floor_us
    assert eager >= cfg.layers * dispatch * 1e-6
    assert eager > 2 * graphed
    # with graphs for every batch the same 16 sequences cost a graphed step, not an eager one
    assert PerfModel(replace(cfg, graph_max_seqs=-1)).decode_time(16, 16 * 131072, 3) < 0.6 * eager
    # the decode-phase arrays take the same path as the scalar calls
    phase = perf.decode_times(16, np.array([16 * 131072, 16 * 131072 + 16]), 1)
    assert phase[0] == perf.decode_time(16, 16 * 131072, 1)
    # prefill steps are never graphed, so the limit does not touch them
    assert perf.prefill_time(4096) == PerfModel(replace(cfg, graph_max_seqs=-1)).prefill_time(4096)


def test_random_dispatch_loads_the_busiest_rank_more_than_balanced() -> None:
    cfg = replace(SimConfig.from_recipe(catalog(), ASCEND), max_num_seqs=128)
    rnd = StepModel(replace(cfg, graph_max_seqs=-1))
    bal = StepModel(replace(cfg, graph_max_seqs=-1, rank_dispatch="balanced"))
    assert rnd._busiest_rank(16) * 16 > 4 > bal._busiest_rank(16) * 16 - 1e-9
    assert rnd.step_time(16, 16, 16 * 131072, 16 * 131072) > bal.step_time(16, 16, 16 * 131072,
                                                                        16 * 131072)


def test_a_rank_never_runs_more_than_its_share_of_the_batch_limit() -> None:
    # SGLang gives each DP worker max-running-requests // dp running requests (32 // 8 = 4 on
    # the Ascend decode pool, exactly its cuda-graph-max-bs): requests placed on a full rank
    # wait there, so the busiest rank never passes 4 and the pool never steps eagerly
    cfg = SimConfig.from_recipe(catalog(), ASCEND)
    step = StepModel(cfg)
    for seqs in (16, 24, 32):
        assert step._graphed(seqs), seqs
    eager = PerfModel(replace(cfg, max_num_seqs=64)).decode_time(16, 16 * 131072, 3)
    assert PerfModel(cfg).decode_time(16, 16 * 131072, 3) < 0.6 * eager
    # E[min(busiest, 4)]: exact against a Monte Carlo draw
    assert expected_max_load(16, 8, 4) < 4 < expected_max_load(16, 8)
    assert expected_max_load(40, 8, 4) == 4 and expected_max_load(2000, 8, 4) == 4
    assert expected_max_load(8, 8, 0) == expected_max_load(8, 8)
    rng = np.random.default_rng(11)
    draws = [min(4, np.bincount(rng.integers(0, 8, 16), minlength=8).max()) for _ in range(20000)]
    assert abs(expected_max_load(16, 8, 4) - float(np.mean(draws))) < 0.05


def test_context_parallel_prefill_splits_the_prompt_over_its_ranks() -> None:
    cfg = SimConfig.from_recipe(catalog(), ASCEND).prefill
    assert cfg is not None
    split = PerfModel(cfg).prefill_time(131072)
    whole = PerfModel(replace(cfg, attention_cp=1)).prefill_time(131072)
    # without context parallelism each die scores every query's indexer pairs and the whole
    # prompt's activations cross TP32 in all-reduces
    assert split < 0.5 * whole
