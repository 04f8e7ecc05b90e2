"""`infermatrix validate`: every kind of bad input gets `path:line: field: message`, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infermatrix.catalog.loader import load_catalog
from infermatrix.cli import main

GOOD_RECIPE = """\
model: llama-3.1-70b-instruct
hardware: H200
engine:
  name: vllm
  version: "0.10.0"
  image: vllm/vllm-openai:v0.10.0
precision: fp8
topology:
  mode: aggregated
  pools:
    - role: both
      parallel: {tp: 8}
source:
  document: test
  submitted_by: test
"""


def run_validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    """(exit code, stderr lines but the warnings: test_validate_render.py checks those)."""
    code = main(["validate", *args])
    err = capsys.readouterr().err.strip().splitlines()
    return code, [line for line in err if not line.startswith("warning: ")]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_repository_catalog_is_valid(capsys: pytest.CaptureFixture[str], repo_root: Path) -> None:
    assert main(["validate", "--root", str(repo_root)]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_good_extra_recipe_passes(capsys, tmp_path: Path) -> None:
    recipe = write(tmp_path / "llama" / "good.yaml", GOOD_RECIPE)
    code, err = run_validate(capsys, str(recipe))
    assert (code, err) == (0, [])


def test_broken_yaml(capsys, tmp_path: Path) -> None:
    recipe = write(tmp_path / "r" / "broken.yaml", GOOD_RECIPE.replace("  name: vllm", "  name: [vllm"))
    code, err = run_validate(capsys, str(recipe))
    assert code == 2
    assert len(err) == 1
    assert err[0] == f"{recipe}:5: invalid YAML: expected ',' or ']', but got ':'"


def test_unknown_key(capsys, tmp_path: Path) -> None:
    recipe = write(tmp_path / "r" / "extra.yaml",
                   GOOD_RECIPE.replace("  image: vllm", "  colour: red\n  image: vllm"))
    code, err = run_validate(capsys, str(recipe))
    assert (code, err) == (2, [f"{recipe}:6: engine.colour: unknown field"])


def test_wrong_type(capsys, tmp_path: Path) -> None:
    recipe = write(tmp_path / "r" / "type.yaml", GOOD_RECIPE.replace("{tp: 8}", "{tp: eight}"))
    code, err = run_validate(capsys, str(recipe))
    assert code == 2
    assert err == [f"{recipe}:12: topology.pools[0].parallel.tp: "
                   "Input should be a valid integer"]


def test_missing_field(capsys, tmp_path: Path) -> None:
    recipe = write(tmp_path / "r" / "missing.yaml", GOOD_RECIPE.replace("precision: fp8\n", ""))
    code, err = run_validate(capsys, str(recipe))
    assert (code, err) == (2, [f"{recipe}:1: precision: field required"])


def test_dangling_model_reference(capsys, tmp_path: Path) -> None:
    recipe = write(tmp_path / "r" / "dangling.yaml",
                   GOOD_RECIPE.replace("model: llama-3.1-70b-instruct", "model: llama-9"))
    code, err = run_validate(capsys, str(recipe))
    assert (code, err) == (2, [f"{recipe}:1: model: unknown model 'llama-9' (see matrix/models.yaml)"])


def test_duplicate_key(capsys, tmp_path: Path) -> None:
    recipe = write(tmp_path / "r" / "dup.yaml", GOOD_RECIPE + "precision: bf16\n")
    code, err = run_validate(capsys, str(recipe))
    assert (code, err) == (2, [f"{recipe}:16: precision: duplicate key"])


def test_parallelism_must_fit_hardware(capsys, tmp_path: Path) -> None:
    # 70B at fp8 on one H100 is 70 GB of weights on an 80 GB GPU: over the 95% share? no -> fits;
    # tp 3 does not divide 64 heads, and tp 12 spans 8-GPU nodes unevenly.
    recipe = write(tmp_path / "r" / "tp.yaml", GOOD_RECIPE.replace("{tp: 8}", "{tp: 12}"))
    code, err = run_validate(capsys, str(recipe))
    assert code == 2
    assert err == [
        f"{recipe}:12: topology.pools[0].parallel.tp: attention tensor parallelism 12 must divide "
        "the model's 64 attention heads",
        f"{recipe}:12: topology.pools[0].parallel: an instance of 12 GPUs spans nodes of 8 H200 "
        "GPUs unevenly",
        f"{recipe}:12: topology.pools[0].parallel: an instance of 12 GPUs does not fill whole "
        "scale-up domains of 8",
    ]


def test_weights_must_fit_memory(capsys, tmp_path: Path) -> None:
    recipe = write(tmp_path / "r" / "mem.yaml",
                   GOOD_RECIPE.replace("{tp: 8}", "{tp: 1}").replace("precision: fp8", "precision: bf16"))
    code, err = run_validate(capsys, str(recipe))
    assert (code, err) == (2, [f"{recipe}:12: topology.pools[0].parallel: weights need 141 GB per "
                               "GPU at bf16; H200 has 141 GB"])


def test_disaggregated_needs_router_and_kv_transfer(capsys, tmp_path: Path) -> None:
    text = GOOD_RECIPE.replace(
        "  mode: aggregated\n  pools:\n    - role: both\n      parallel: {tp: 8}\n",
        "  mode: disaggregated\n  pools:\n    - role: prefill\n      parallel: {tp: 4}\n"
        "    - role: decode\n      parallel: {tp: 4}\n",
    )
    recipe = write(tmp_path / "r" / "pd.yaml", text)
    code, err = run_validate(capsys, str(recipe))
    assert (code, err) == (2, [f"{recipe}:1: a disaggregated topology needs router and kv_transfer"])


def test_bad_hardware_file(capsys, catalog_copy: Path) -> None:
    hw = catalog_copy / "matrix" / "hardware.yaml"
    hw.write_text(hw.read_text().replace("  hbm_tbps: 3.35", "  hbm_tbps: -1", 1))
    code, err = run_validate(capsys, "--root", str(catalog_copy))
    assert code == 2
    assert err == ["matrix/hardware.yaml:10: H100.hbm_tbps: Input should be greater than 0"]


def test_sweep_dangling_references(capsys, catalog_copy: Path) -> None:
    sweep = write(catalog_copy / "matrix" / "sweeps" / "bad.yaml",
                  "entries:\n  - recipes: [nothing/*]\n    workloads: [nope]\n"
                  "    concurrency: [1]\n    runners: [ghost]\n")
    code, err = run_validate(capsys, "--root", str(catalog_copy), str(sweep))
    assert code == 2
    assert err == [
        "matrix/sweeps/bad.yaml:2: entries[0].recipes[0]: no recipe matches 'nothing/*'",
        "matrix/sweeps/bad.yaml:3: entries[0].workloads[0]: unknown workload 'nope'",
        "matrix/sweeps/bad.yaml:5: entries[0].runners[0]: unknown runner label 'ghost'",
    ]


def test_fleet_unknown_hardware(capsys, catalog_copy: Path) -> None:
    fleets = catalog_copy / "runners" / "fleets.yaml"
    fleets.write_text(fleets.read_text() + "\nmystery:\n  hardware: TPU9\n  kind: docker\n"
                      "  gpus_per_node: 4\n")
    code, err = run_validate(capsys, "--root", str(catalog_copy))
    assert code == 2
    line = fleets.read_text().splitlines().index("  hardware: TPU9") + 1
    assert err == [f"runners/fleets.yaml:{line}: mystery.hardware: unknown hardware 'TPU9'"]


def test_missing_path_is_one_line(capsys, tmp_path: Path) -> None:
    code, err = run_validate(capsys, str(tmp_path / "nope.yaml"))
    assert (code, err) == (2, [f"infermatrix: {tmp_path / 'nope.yaml'}: no such file or folder"])


def test_real_process_exit_code_and_no_traceback(tmp_path: Path) -> None:
    recipe = write(tmp_path / "r" / "extra.yaml", GOOD_RECIPE.replace("precision: fp8", "precison: fp8"))
    proc = subprocess.run([sys.executable, "-m", "infermatrix.cli", "validate", str(recipe)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"{recipe}:1: precision: field required",
                                        f"{recipe}:7: precison: unknown field"]


@pytest.mark.parametrize(("entry", "message"), [
    ("  mixed_precision: {fp8: {experts: nvfp4, rest: fp8}}\n",
     "llama-3.1-8b-instruct.mixed_precision: only a model with routed experts "
     "(moe_experts above moe_active_experts) can store them at a precision of their own"),
    ("  mixed_precision: {fp8: {experts: fp8, rest: fp8}}\n",
     "llama-3.1-8b-instruct.mixed_precision.fp8: experts and rest are both fp8: "
     "not a mixed checkpoint (leave the entry out)"),
    ("  mixed_precision: {fp8: {experts: fp6, rest: bf16}}\n",
     "llama-3.1-8b-instruct.mixed_precision.fp8.experts: Input should be 'bf16', 'fp16', 'fp8', "
     "'nvfp4', 'mxfp4', 'fp4', 'w8a8-int8', 'w4a8' or 'w4a16'"),
])
def test_bad_mixed_precision_points_at_its_line(capsys, catalog_copy: Path, entry: str,
                                                message: str) -> None:
    models = catalog_copy / "matrix" / "models.yaml"
    text = models.read_text()
    anchor = "llama-3.1-8b-instruct:\n"
    models.write_text(text.replace(anchor, anchor + entry, 1))
    line = models.read_text().splitlines().index(entry.rstrip("\n")) + 1
    code, err = run_validate(capsys, "--root", str(catalog_copy))
    assert code == 2
    assert err == [f"matrix/models.yaml:{line}: {message}"]


def test_a_mixed_checkpoint_weighs_its_experts_and_the_rest_apart() -> None:
    """gpt-oss-120b: MXFP4 experts (4.25 bits) and BF16 attention, embeddings and LM head make
    the weights the memory check counts; at a precision the model does not list (bf16) every
    weight is at that precision."""
    model = load_catalog().models["gpt-oss-120b"]
    experts = model.expert_params_b
    assert experts == pytest.approx(115.3, abs=0.1)
    for precision in ("mxfp4", "w4a16"):  # the same checkpoint, Hopper's weight-only kernels
        assert model.weight_bytes_b(precision) == pytest.approx(
            experts * 4.25 / 8 + (model.total_params_b - experts) * 2)
    assert model.weight_bytes_b("bf16") == pytest.approx(model.total_params_b * 2)
