"""Every command and config file in the seeds, rendered from our recipes, token for token.

Each tests/engines/golden/*.yaml holds a seed's commands verbatim (continuations and all),
the values its own placeholders take (``seed_values``, e.g. ``<model-path>``), and the values we
bind on our side (``bind``, e.g. ``MODEL``). Both sides are substituted, then compared as argv
token lists; YAML files are compared as data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from imx_seedtext import drop_flags, substitute, tokens

from infermatrix.catalog.loader import Catalog, load_catalog
from infermatrix.engines import Deployment, docker_argv, render

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("*.yaml"))


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def deploy(catalog: Catalog, case: dict[str, Any]) -> Deployment:
    return render(catalog, case["recipe"], placeholders=case.get("bind", {}))


def strip_keys(data: Any, keys: set[str]) -> Any:
    if isinstance(data, dict):
        return {k: strip_keys(v, keys) for k, v in data.items() if k not in keys}
    if isinstance(data, list):
        return [strip_keys(v, keys) for v in data]
    return data


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_commands(catalog: Catalog, path: Path) -> None:
    case = load(path)
    dep = deploy(catalog, case)
    rendered = {p.name: p for p in dep.processes}
    assert set(case["processes"]) == set(rendered), "the seed and our render disagree on processes"
    for name, expected in case["processes"].items():
        proc = rendered[name]
        values = {**case.get("seed_values", {}), **expected.get("values", {})}
        want = tokens(expected["command"], values)
        got = docker_argv(proc) if expected.get("form") == "docker" else list(proc.argv)
        got = drop_flags(got, expected.get("ignore_flags", []))
        assert got == want, f"{name}: rendered argv differs from the seed"
        if "env" in expected:
            want_env = {k: substitute(str(v), values) for k, v in expected["env"].items()}
            assert proc.env == want_env, f"{name}: environment differs from the seed"


@pytest.mark.parametrize("path", [p for p in CASES if "files" in load(p)],
                         ids=[p.stem for p in CASES if "files" in load(p)])
def test_config_files(catalog: Catalog, path: Path) -> None:
    case = load(path)
    dep = deploy(catalog, case)
    ignore = set(case.get("ignore_keys", []))
    for proc_name, files in case["files"].items():
        proc = dep.process(proc_name)
        for file_name, text in files.items():
            assert file_name in proc.files, f"{proc_name} renders no {file_name}"
            got = strip_keys(yaml.safe_load(proc.files[file_name]), ignore)
            assert got == yaml.safe_load(text), f"{proc_name}/{file_name} differs from the seed"


def test_every_seed_recipe_has_a_golden(catalog: Catalog) -> None:
    """The seed-derived recipes (tags) and the golden files cover each other."""
    seeded = {rid for rid, r in catalog.recipes.items()
              if {"inferencemax", "aa-agentperf", "ascend"} & set(r.tags)}
    golden = {load(p)["recipe"] for p in CASES}
    assert seeded == golden
    assert len(golden) == 9 + 6 + 1


def test_server_config_lists_every_instance(catalog: Catalog) -> None:
    """What the seed leaves out: our server_config.yaml names each worker's host:port."""
    dep = render(catalog, "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep16")
    config = yaml.safe_load(dep.router.files["server_config.yaml"])  # type: ignore[union-attr]
    ctx = [f"{p.host}:{p.port}" for p in dep.by_role("prefill")]
    gen = [f"{p.host}:{p.port}" for p in dep.by_role("decode")]
    assert config["context_servers"]["urls"] == ctx and len(ctx) == 6
    assert config["generation_servers"]["urls"] == gen and len(gen) == 1
    assert len(set(ctx + gen)) == 7
