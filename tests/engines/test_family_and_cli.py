"""Recipe families (load-time expansion) and the `infermatrix catalog` command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infermatrix.catalog.loader import load_catalog
from infermatrix.catalog.yamlsrc import CatalogError
from infermatrix.cli import main
from infermatrix.engines import render

FAMILY = """\
family:
  name: tp${tp}-${mode}
  axes: {tp: [4, 8]}
  points: [{mode: a, adp: false}, {mode: b, adp: true}]
model: llama-3.1-70b-instruct
hardware: H200
engine: {name: sglang, version: x, image: "sglang:x"}
precision: fp8
topology:
  pools:
    - parallel: {tp: "${tp}", attention_dp: "${adp}"}
      args: {max-running-requests: "${tp}"}
source: {document: test, submitted_by: test}
"""


def copy_catalog(repo_root: Path, tmp_path: Path) -> Path:
    for part in ("matrix", "runners", "benchmarks"):
        shutil.copytree(repo_root / part, tmp_path / part)
    return tmp_path


def test_family_expands_points_times_axes(repo_root: Path, tmp_path: Path) -> None:
    root = copy_catalog(repo_root, tmp_path)
    (root / "benchmarks/llama-3.1-70b-instruct/fam.yaml").write_text(FAMILY)
    cat = load_catalog(root)
    ids = {r for r in cat.recipes if r.startswith("llama-3.1-70b-instruct/fam/")}
    assert ids == {f"llama-3.1-70b-instruct/fam/tp{t}-{m}" for m in "ab" for t in (4, 8)}
    r = cat.recipes["llama-3.1-70b-instruct/fam/tp8-b"]
    assert r.topology.pools[0].parallel.tp == 8 and r.topology.pools[0].parallel.dp == 8
    argv = render(cat, "llama-3.1-70b-instruct/fam/tp4-a").processes[0].argv
    assert "--tp" in argv and argv[argv.index("--max-running-requests") + 1] == "4"


def test_family_errors_name_the_file_and_variant(repo_root: Path, tmp_path: Path) -> None:
    root = copy_catalog(repo_root, tmp_path)
    path = root / "benchmarks/llama-3.1-70b-instruct/fam.yaml"
    path.write_text(FAMILY.replace("axes: {tp: [4, 8]}", "axes: {tp: [4, 0]}"))
    with pytest.raises(CatalogError) as exc:
        load_catalog(root)
    assert any("variant llama-3.1-70b-instruct/fam/tp0-" in str(p) and "fam.yaml" in str(p)
               for p in exc.value.problems)
    path.write_text(FAMILY.replace("axes: {tp: [4, 8]}", "axes: {tp: [4, 3]}"))  # 64 heads
    with pytest.raises(CatalogError, match=r"attention heads \(variant llama-3.1-70b-instruct/fam/tp3-a\)"):
        load_catalog(root)
    path.write_text(FAMILY.replace("${mode}", "${nope}"))
    with pytest.raises(CatalogError, match="no value for nope"):
        load_catalog(root)


def test_catalog_check_and_outputs(repo_root: Path, tmp_path: Path, capsys) -> None:
    root = copy_catalog(repo_root, tmp_path)
    out = tmp_path / "page.md"
    js = tmp_path / "catalog.json"
    assert main(["catalog", "--root", str(root), "--check", "-o", str(out)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["catalog", "--root", str(root), "-o", str(out), "--json", str(js)]) == 0
    assert main(["catalog", "--root", str(root), "--check", "-o", str(out), "--json", str(js)]) == 0
    page = out.read_text()
    data = json.loads(js.read_text())
    assert data["schema_version"] == 1 and data["count"] == len(load_catalog(root).recipes)
    assert f"Showing {data['count']} configurations" in page
    gb = next(e for m in data["models"] for e in m["configurations"]
              if e["id"] == "deepseek-v4-pro/gb300-trtllm-nvfp4-6ctx-1gen-dep16")
    assert gb["gpus_used"] == "40 of 72" and gb["submitted_by"] == "NVIDIA"
    assert gb["engine"] == "TensorRT-LLM" and gb["engine_version"] == "1.3.0rc15.post1"
    assert "`gen_config.yaml`:" in page and "trtllm-serve disaggregated" in page
    (root / "benchmarks/deepseek-r1-0528/h200-sglang-fp8.yaml").write_text(
        (root / "benchmarks/deepseek-r1-0528/h200-sglang-fp8.yaml").read_text()
        .replace("max-running-requests: 512", "max-running-requests: 256"))
    assert main(["catalog", "--root", str(root), "--check", "-o", str(out)]) == 1

