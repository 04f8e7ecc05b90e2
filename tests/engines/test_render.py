"""Rendering rules beyond the seeds: flags, quoting, placement, routers, errors."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from infermatrix.catalog.hostlist import Allocation
from infermatrix.catalog.loader import Catalog, load_catalog
from infermatrix.catalog.schema import Recipe
from infermatrix.engines import RenderError, docker_argv, join, render, render_recipe, shell_command
from infermatrix.engines.flags import DOCKER, Repeat, render_flag, render_flags


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def recipe(**over: Any) -> Recipe:
    base: dict[str, Any] = {
        "model": "llama-3.1-70b-instruct", "hardware": "H200",
        "engine": {"name": "vllm", "version": "0.10.0", "image": "vllm/vllm-openai:v0.10.0"},
        "precision": "fp8",
        "topology": {"pools": [{"parallel": {"tp": 8}}]},
        "source": {"document": "test", "submitted_by": "test"},
    }
    base.update(over)
    return Recipe.model_validate(base)


def disagg(engine: str, router: str, prefill: int = 2, decode: int = 1, **extra: Any) -> Recipe:
    return recipe(
        model="deepseek-r1-0528",
        engine={"name": engine, "version": "x", "image": f"{engine}:x"},
        topology={"mode": "disaggregated", "pools": [
            {"role": "prefill", "instances": prefill, "parallel": {"tp": 4}},
            {"role": "decode", "instances": decode, "parallel": {"tp": 8}},
        ]},
        router={"name": router, "policy": "round_robin"}, kv_transfer={"backend": "nixl"}, **extra,
    )


# --------------------------------------------------------------------------- flag rules


def test_flag_rules() -> None:
    assert render_flag("port", 8000) == ["--port", "8000"]
    assert render_flag("tensor-parallel-size=", 8) == ["--tensor-parallel-size=8"]
    assert render_flag("-t", 7200) == ["-t", "7200"]
    assert render_flag("enable-x", True) == ["--enable-x"]
    assert render_flag("enable-x", False) == [] and render_flag("host", None) == []
    assert render_flag("cuda-graph-bs", [4, 8]) == ["--cuda-graph-bs", "4", "8"]
    assert render_flag("cfg", {"a": True, "b": [1]}) == ["--cfg", '{"a": true, "b": [1]}']
    assert render_flag("device", ["/dev/kfd", "/dev/dri"], DOCKER) == \
        ["--device", "/dev/kfd", "--device", "/dev/dri"]
    assert render_flag("device=", ["/dev/kfd", "/dev/dri"], DOCKER) == \
        ["--device=/dev/kfd", "--device=/dev/dri"]
    assert render_flag("prefill", Repeat((["http://a:1", 8998], ["http://b:1", 8999]))) == \
        ["--prefill", "http://a:1", "8998", "--prefill", "http://b:1", "8999"]
    assert render_flags([("a", 1), ("b", None), ("c", True)]) == ["--a", "1", "--c"]


# --------------------------------------------------------------------------- no shell injection

EVIL = ["; rm -rf /", "$(touch pwned)", "`touch pwned`", "a b\nc", "'\"", "${HOME}x$(touch pwned)"]


def run_shell(line: str, cwd, env: dict[str, str] | None = None) -> list[bytes]:
    """Run ``line`` with a fake ``vllm`` that prints its arguments and $EVIL, NUL-separated."""
    bin_dir = cwd / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "vllm"
    fake.write_text('#!/bin/sh\nprintf \'%s\\0\' "$@" "EVIL=$EVIL"\n')
    fake.chmod(0o755)
    out = subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, check=True,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", **(env or {})}).stdout
    return out.split(b"\0")[:-1]


# (A ``${NAME}`` written in a recipe is a placeholder by definition, and a recipe's env value
# with a newline is refused at load (tests/security/test_catalog_values.py), so only bound
# values carry those cases.)
INJECTION_CASES = [pytest.param(evil, direct, id=f"{'in-recipe' if direct else 'bound'}-{i}")
                   for i, evil in enumerate(EVIL) for direct in (True, False)
                   if not (direct and ("${" in evil or "\n" in evil))]


@pytest.mark.parametrize(("evil", "direct"), INJECTION_CASES)
def test_values_cannot_inject_shell(catalog: Catalog, evil: str, direct: bool, tmp_path) -> None:
    """Written in the recipe or bound to a placeholder, a value is one argument and runs nothing."""
    value = evil if direct else "${EVIL_VALUE}"
    r = recipe(env={"EVIL": value}, topology={"pools": [{"parallel": {"tp": 8},
                                                         "args": {"served-model-name": value}}]})
    dep = render_recipe(catalog, "test/evil", r,
                        placeholders={"MODEL": evil, "PORT": "8000", "EVIL_VALUE": evil})
    proc = dep.processes[0]
    assert proc.argv[proc.argv.index("--served-model-name") + 1] == evil  # one argument
    assert proc.argv[2] == evil and proc.env["EVIL"] == evil
    # a real shell runs our text: the program gets exactly our tokens, nothing else runs
    got = run_shell(shell_command(proc), tmp_path)
    assert got == [t.encode() for t in proc.argv[1:]] + [f"EVIL={evil}".encode()]
    assert not (tmp_path / "pwned").exists()


def test_unbound_placeholder_expands_but_is_not_reparsed(catalog: Catalog, tmp_path) -> None:
    proc = render_recipe(catalog, "test/p", recipe()).processes[0]
    line = shell_command(proc)
    assert '"${MODEL}"' in line and '"${PORT}"' in line
    hostile = "$(touch pwned); x"
    got = run_shell(line, tmp_path, {"MODEL": hostile, "PORT": "1"})
    assert got[1] == hostile.encode() and not (tmp_path / "pwned").exists()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=20), min_size=1, max_size=6))
def test_join_round_trips(argv: list[str]) -> None:
    argv = [a.replace("\0", "") for a in argv]
    if any("${" in a for a in argv):  # placeholders are meant to expand
        return
    assert shlex.split(join(argv)) == argv


# --------------------------------------------------------------------------- schema agreement


def test_args_contradicting_the_schema_fail(catalog: Catalog) -> None:
    r = recipe(topology={"pools": [{"parallel": {"tp": 8}, "args": {"tensor-parallel-size": 4}}]})
    with pytest.raises(RenderError, match=r"tensor-parallel-size: 4 contradicts parallel.tp"):
        render_recipe(catalog, "test/x", r)
    r = recipe(params={"TP": 2},
               topology={"pools": [{"parallel": {"tp": 8}, "args": {"tp": "${TP}"}}]})
    with pytest.raises(RenderError, match="contradicts parallel.tp"):
        render_recipe(catalog, "test/x", r)


def test_args_take_the_derived_flags_place(catalog: Catalog) -> None:
    r = recipe(topology={"pools": [{"parallel": {"tp": 8},
                                    "args": {"max-num-seqs": 4, "port": 9000, "host": None}}]})
    proc = render_recipe(catalog, "test/x", r).processes[0]
    assert list(proc.argv[3:]) == ["--tensor-parallel-size", "8", "--max-num-seqs", "4",
                                   "--port", "9000"]
    assert proc.port == 9000


# --------------------------------------------------------------------------- disaggregation


def test_sglang_bootstrap_ports_match_router(catalog: Catalog) -> None:
    dep = render_recipe(catalog, "test/pd", disagg("sglang", "sglang-router", prefill=3))
    prefill = dep.by_role("prefill")
    pairs = []
    for p in prefill:
        argv = list(p.argv)
        assert argv[argv.index("--disaggregation-mode") + 1] == "prefill"
        boot = argv[argv.index("--disaggregation-bootstrap-port") + 1]
        pairs.append([f"http://{p.host}:{p.port}", boot])
    router = list(dep.router.argv)  # type: ignore[union-attr]
    got = [router[i + 1:i + 3] for i, t in enumerate(router) if t == "--prefill"]
    assert got == pairs and len({b for _, b in pairs}) == 3
    decode = dep.by_role("decode")[0]
    assert router[router.index("--decode") + 1] == f"http://{decode.host}:{decode.port}"
    assert "--disaggregation-bootstrap-port" not in decode.argv


def test_vllm_disaggregated_gets_kv_transfer_config(catalog: Catalog) -> None:
    dep = render_recipe(catalog, "test/pd", disagg("vllm", "vllm-router"))
    argv = list(dep.by_role("decode")[0].argv)
    cfg = json.loads(argv[argv.index("--kv-transfer-config") + 1])
    assert cfg == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    router = dep.router.argv  # type: ignore[union-attr]
    assert router[0] == "vllm-router" and "--vllm-pd-disaggregation" in router
    assert router.count("--prefill") == 2 and router.count("--decode") == 1


def test_trtllm_multi_node_worker_is_one_mpi_job(catalog: Catalog) -> None:
    dep = render(catalog, "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep16")
    gen = dep.by_role("decode")[0]
    assert gen.mpi is not None and gen.mpi.ntasks == 16 and len(gen.mpi.hosts) == 4
    assert shell_command(gen).splitlines()[-1].startswith("srun --nodes 4 --ntasks 16")
    gen_cfg = yaml.safe_load(gen.files["gen_config.yaml"])
    assert gen_cfg["tensor_parallel_size"] == 16 and gen_cfg["enable_attention_dp"] is True


def test_slurm_allocation_places_like_gen_yaml(catalog: Catalog) -> None:
    alloc = Allocation.from_slurm("a3-[01-04]", "16(x4)")
    dep = render(catalog, "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d", allocation=alloc)
    assert [p.host for p in dep.workers] == ["a3-01", "a3-02", "a3-03", "a3-04"]
    env = dep.workers[0].env
    assert env["ASCEND_MF_STORE_URL"] == "tcp://a3-01:24670"  # ${NODE_0} = first node
    assert "--dist-init-addr" in dep.workers[3].argv
    assert dep.workers[3].argv[dep.workers[3].argv.index("--dist-init-addr") + 1] == "a3-03:5000"


def test_allocation_too_small_is_a_clear_error(catalog: Catalog) -> None:
    alloc = Allocation.from_slurm("a3-[01-03]", "16(x3)")
    with pytest.raises(RenderError, match=r"cannot hold the topology .*64 GPUs"):
        render(catalog, "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d", allocation=alloc)


# --------------------------------------------------------------------------- interface


def test_deployment_interface(catalog: Catalog) -> None:
    dep = render(catalog, "llama-3.1-70b-instruct/h200-vllm-fp8",
                 placeholders={"MODEL": "/m", "PORT": "8123", "CONC": "16", "NODE_0": "127.0.0.1"})
    (proc,) = dep.processes
    assert proc.role == "both" and proc.port == 8123 and proc.health_path == "/health"
    assert proc.gpus == tuple(range(8)) and dep.unbound == frozenset()
    assert dep.front_door.url == "http://127.0.0.1:8123/v1"
    assert dep.canary.path == "/v1/completions" and dep.canary.body["model"] == "/m"
    docker = docker_argv(proc, name="job-1")
    assert docker[:6] == ["docker", "run", "--name", "job-1", "--gpus", "all"]
    assert docker[docker.index("kedarpotdar147/vllm0.1:latest") + 1:] == list(proc.argv)


def test_every_catalog_recipe_renders(catalog: Catalog) -> None:
    for rid in catalog.recipes:
        dep = render(catalog, rid)
        assert dep.processes and dep.front_door.port is not None
        assert {"MODEL"} <= dep.unbound or any("--model-path" in p.argv for p in dep.workers)


def test_aggregated_instances_behind_a_router(catalog: Catalog) -> None:
    r = recipe(engine={"name": "sglang", "version": "x", "image": "sglang:x"},
               topology={"pools": [{"instances": 4, "parallel": {"tp": 2}}]},
               router={"name": "sglang-router", "policy": "cache_aware", "port": 30000})
    dep = render_recipe(catalog, "test/dp", r, placeholders={"NODE_0": "h0"})
    workers = dep.workers
    assert [p.gpus for p in workers] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert [p.env["CUDA_VISIBLE_DEVICES"] for p in workers] == ["0,1", "2,3", "4,5", "6,7"]
    assert len({p.port for p in workers}) == 4
    router = list(dep.router.argv)  # type: ignore[union-attr]
    i = router.index("--worker-urls")
    assert router[i + 1:i + 5] == [f"http://h0:{p.port}" for p in workers]
    assert dep.front_door.url == "http://h0:30000/v1"
    docker = docker_argv(workers[1])
    assert docker[docker.index("--gpus") + 1] == '"device=2,3"'


def test_vllm_multi_node_instance(catalog: Catalog) -> None:
    r = recipe(model="deepseek-r1-0528", topology={"pools": [{"parallel": {"tp": 8, "pp": 2}}]})
    dep = render_recipe(catalog, "test/mn", r, placeholders={"NODE_0": "a", "NODE_1": "b"})
    head, peer = dep.processes
    assert head.node_rank == 0 and peer.node_rank == 1 and peer.port is None
    for p in (head, peer):
        argv = list(p.argv)
        assert argv[argv.index("--master-addr") + 1] == "a"
        assert argv[argv.index("--nnodes") + 1] == "2"
        assert argv[argv.index("--pipeline-parallel-size") + 1] == "2"
    assert "--headless" in peer.argv and "--headless" not in head.argv


def test_trtllm_aggregated_and_unknown_router(catalog: Catalog) -> None:
    r = recipe(engine={"name": "trtllm", "version": "x"}, kv_cache_dtype="fp8",
               topology={"pools": [{"parallel": {"tp": 8}, "config": {"max_batch_size": 64}}]})
    (proc,) = render_recipe(catalog, "test/t", r).processes
    cfg = yaml.safe_load(proc.files["config.yaml"])
    assert cfg["tensor_parallel_size"] == 8 and cfg["kv_cache_config"] == {"dtype": "fp8"}
    assert proc.container is None and "--config" in proc.argv
    with pytest.raises(RenderError, match="no renderer for 'dynamo'"):
        render_recipe(catalog, "test/d", disagg("sglang", "dynamo"))
    bad = recipe(engine={"name": "trtllm", "version": "x"},
                 topology={"pools": [{"parallel": {"tp": 8}, "config": {"tensor_parallel_size": 4}}]})
    with pytest.raises(RenderError, match="tensor_parallel_size: 4 contradicts parallel.tp"):
        render_recipe(catalog, "test/t", bad)
