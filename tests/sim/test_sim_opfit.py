"""The operator model against the measured H100 table (issue 32): the curves opfit.py fits to the
shipped profile (data/profiles/h100-sxm-2026-11.json, "measured H100 operator timings,
2026-11") hold every operator group the step model has within the issue's bounds, and the
figures a fused engine beats (element-wise, sampling, whole graphed decode steps) bound the
step model from above."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from sim_helpers import catalog

from infermatrix.sim.config import SimConfig
from infermatrix.sim.operators import StepModel
from infermatrix.sim.opfit import MAX_FAMILY_MEDIAN, MAX_REGIME_MEDIAN, compare, fit, summarise
from infermatrix.sim.profiles import PROFILE_DIR, fit_file, load_profile

H100_PROFILE = PROFILE_DIR / "h100-sxm-2026-11.json"
# measured by `infermatrix sim profile` itself on a lent H100 and H200, 2026-11-28
OWN_H100 = PROFILE_DIR / "h100-sxm-2026-11-28.json"
OWN_H200 = PROFILE_DIR / "h200-sxm-2026-11-28.json"
SHARED = Path("/work/shared/measurements/h100-operators-2026-11.json")  # the measurement itself
FAMILIES = {"attention projections", "dense MLP", "LM head", "decode attention",
            "prefill attention"}
# the step model's configurations for the profile's model shapes
SHAPES = {("llama-3.1-8b-tp1", "bf16"): ("llama-3.1-8b-instruct", "bf16", 1),
          ("llama-3.1-8b-tp1", "fp8"): ("llama-3.1-8b-instruct", "fp8", 1),
          ("llama-3.1-70b-tp8", "bf16"): ("llama-3.1-70b-instruct", "bf16", 8),
          ("llama-3.1-70b-tp8", "fp8"): ("llama-3.1-70b-instruct", "fp8", 8)}


def step_model(hardware: str, model: str, precision: str, tp: int) -> StepModel:
    return StepModel(SimConfig.from_parts(catalog(), hardware, model, precision, tp=tp))


def h100(model: str, precision: str, tp: int) -> StepModel:
    sm = step_model("H100", model, precision, tp)
    assert sm.cfg.operator_profile and Path(sm.cfg.operator_profile).name == H100_PROFILE.name
    return sm


def test_every_operator_family_fits_the_measured_h100_table() -> None:
    doc = load_profile(H100_PROFILE)
    points = compare(doc, fit(doc))
    summaries = {s.family: s for s in summarise(points)}
    assert set(summaries) == FAMILIES
    lines = "\n".join(s.line() for s in summaries.values())
    for s in summaries.values():
        assert s.points >= 9, lines
        assert s.median_abs <= MAX_FAMILY_MEDIAN, lines
        assert all(abs(v) <= MAX_REGIME_MEDIAN for v in s.regimes.values()), lines
    gemm_regimes = {p.regime for p in points if p.family == "dense MLP"}
    assert gemm_regimes == {"decode", "mid", "prefill"}


def test_the_step_model_times_gemms_and_attention_as_the_fit_does() -> None:
    """At the simulator's granularity: the step model's attention projections and dense
    MLP of one layer, and its LM head (one a step, BF16), against the measured sums, per
    regime. The LM head was measured in BF16 at decode M only."""
    doc = load_profile(H100_PROFILE)
    measured: dict[tuple[str, str, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in doc["results"]:
        if r["section"] == "gemm":
            measured[(r["model"], r["dtype"], r["m"])][r["name"]] += r["median_ms"] * 1e-3
    errors: dict[str, list[float]] = defaultdict(list)
    for (model, dtype, m), got in measured.items():
        sm = h100(*SHAPES[(model, dtype)])
        attn, dense = sm._gemms(float(m))
        errors["attention projections"].append(attn / (got["qkv"] + got["o"]) - 1)
        errors["dense MLP"].append(dense / (got["gate_up"] + got["down"]) - 1)
        if "lm_head" in got and dtype == "bf16":
            errors["LM head"].append(sm.head_s(float(m), sustained=False) / got["lm_head"] - 1)
    report = {k: (round(statistics.median(abs(e) for e in v), 3), len(v)) for k, v in errors.items()}
    assert set(report) == {"attention projections", "dense MLP", "LM head"}
    assert all(med <= MAX_FAMILY_MEDIAN and n >= 8 for med, n in report.values()), report


@pytest.mark.parametrize(("profile", "hardware"), [
    (H100_PROFILE, "H100"), (OWN_H100, "H100"), (OWN_H200, "H200")],
    ids=["h100-table", "h100-sim-profile", "h200-sim-profile"])
def test_fused_kernels_and_whole_steps_stay_at_or_below_the_unfused_measurements(
        profile: Path, hardware: str) -> None:
    """The measured element-wise kernels (unfused torch), sampler and whole graphed decode
    steps (these pieces launched back to back, no collectives, no host) are upper bounds of
    what an engine's fused kernels take: the step model the simulator runs for that GPU stays
    at or below them (within the measurements' own spread), on the H100 table and on the
    H100 and H200 that `sim profile` measured."""
    doc = load_profile(profile, need_datasheet=False)
    ratio: dict[str, list[float]] = defaultdict(list)
    for r in doc["results"]:
        slack = 1.0 + r.get("spread", 0.0)
        if r["section"] == "elementwise" and (r["model"], "bf16") in SHAPES:
            sm = step_model(hardware, *SHAPES[(r["model"], "bf16")])
            e = max(sm.elem_s_tok * r["m"], sm.elem_floor)
            ratio["elementwise"].append(e * 1e3 / r["median_ms"])
            assert e * 1e3 <= r["median_ms"] * slack, r["id"]
            # ... and moves the bytes they do: norms and residuals (8 x hidden) and the gated
            # activation (3 x the MLP width), which fusion cannot save (the width from the dense
            # parameters, the embedding tables taken out)
            assert sm.elem_bytes_tok == pytest.approx(r["bytes"] / r["m"], rel=0.01), r["id"]
        elif r["section"] == "sampling" and r["variant"] == "sample":
            sm = step_model(hardware, *SHAPES[("llama-3.1-8b-tp1", "bf16")])
            s = sm.sample_fixed + sm.sample_s_seq * r["batch"]
            assert s * 1e3 <= r["median_ms"] * slack, r["id"]
        elif r["section"] == "decode_step":
            sm = step_model(hardware, *SHAPES[(r["model"], r["dtype"])])
            k = sm.decode_kernels_s(r["batch"], r["batch"] * r["ctx"])
            ratio["step"].append(r["median_ms"] / (k * 1e3))
            assert k * 1e3 <= r["median_ms"] * slack, (r["id"], k * 1e3, r["median_ms"])
    assert len(ratio["step"]) == 16 and len(ratio["elementwise"]) == 22


@pytest.mark.parametrize("profile", [OWN_H100, OWN_H200], ids=["h100", "h200"])
def test_the_h100_table_fit_carries_to_gpus_sim_profile_measured(profile: Path) -> None:
    """The operator model fitted to the H100 table, on another GPU's datasheet, against what
    `infermatrix sim profile` measured on a lent H100 and an H200 (2026-11-28): the GEMM
    families and prefill attention within the issue's bounds. Decode attention is held where
    the KV read dominates (batch >= 64): at batch 1-16 torch 2.11's cuDNN kernel, which splits
    each sequence's keys, takes 0.51-1.00 of the H100 table's fastest time (those kernels walk
    the keys in order); docs/sim.md "Profiles measured by `sim profile`"."""
    doc = load_profile(profile, need_datasheet=False)
    hardware = doc["hardware"]
    sheet = catalog().hardware[hardware]
    doc = {**doc, "datasheet": {"tflops": dict(sheet.tflops), "hbm_tbps": sheet.hbm_tbps}}
    points = compare(doc, fit_file(H100_PROFILE))
    summaries = {s.family: s for s in summarise(points)}
    lines = "\n".join(s.line() for s in summaries.values())
    for family in FAMILIES - {"decode attention"}:
        s = summaries[family]
        assert s.median_abs <= MAX_FAMILY_MEDIAN, lines
        assert all(abs(v) <= MAX_REGIME_MEDIAN for v in s.regimes.values()), lines
    kv_bound = [abs(p.error) for p in points if p.family == "decode attention"
                and int(p.label.split("B=")[1].split()[0]) >= 64]
    assert len(kv_bound) == 12 and statistics.median(kv_bound) <= MAX_FAMILY_MEDIAN, lines


def test_the_shipped_profile_is_the_measurement() -> None:
    """The project ships the measured table (results as measured, bookkeeping dropped); where
    the measurement file itself is at hand, every timing agrees with it."""
    if not SHARED.exists():
        pytest.skip(f"{SHARED} not here (the shipped copy is what the tests read)")
    raw = json.loads(SHARED.read_text())
    shipped = {r["id"]: r["median_ms"] for r in load_profile(H100_PROFILE)["results"]}
    assert shipped == {r["id"]: r["median_ms"] for r in raw["results"]}


def test_hopper_entries_share_the_h100_fit() -> None:
    """H800 and H20 run the same SM90 kernels: their entries name the H100 table, and the
    efficiencies apply as shares of each one's own datasheet. H200 names its own measured
    profile, whose shares agree with the H100 table's: the same chip on faster HBM."""
    fitted = fit_file(H100_PROFILE)
    for name in ("H100", "H800", "H20"):
        assert catalog().hardware[name].profile == H100_PROFILE.stem
    assert catalog().hardware["H200"].profile == OWN_H200.stem
    own = fit_file(OWN_H200)
    for dtype in ("bf16", "fp8"):
        a, b = fitted.gemm[dtype], own.gemm[dtype]
        assert abs(a.mem_eff - b.mem_eff) <= 0.05 and abs(a.comp_eff - b.comp_eff) <= 0.05
    assert abs(fitted.attention_decode.mem_eff - own.attention_decode.mem_eff) <= 0.05
    assert abs(fitted.attention_prefill.comp_eff - own.attention_prefill.comp_eff) <= 0.05
    h100_s = h100("llama-3.1-8b-instruct", "bf16", 1)._gemms(1.0)[1]
    h200_s = step_model("H200", "llama-3.1-8b-instruct", "bf16", 1)._gemms(1.0)[1]
    # decode GEMMs stream weights: faster in proportion to HBM (4.8 vs 3.35 TB/s), less the
    # fixed ramp of each kernel
    assert 3.35 / 4.8 < h200_s / h100_s < 1.0
    assert fitted.gemm["bf16"].comp_eff > 0.7  # the measured large-GEMM share, not 0.5
