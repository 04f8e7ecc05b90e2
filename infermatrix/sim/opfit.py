"""Operator times from a measured profile: the fitted curves the step model runs on.

A hardware profile (profiles.py; written by ``infermatrix sim profile``, or the measured H100
table shipped in data/profiles/) holds one GPU's operator timings. ``fit`` turns them into a
few physical parameters per operator family, each a share of the profiled GPU's datasheet
(so they carry over to a GPU of the same architecture with other peaks):

- GEMM, per dtype: ``t = t0 + (tm^p + tc^p)^(1/p)``, ``tm`` the weights streamed at
  ``mem_eff`` of HBM, ``tc`` the FLOPs at ``comp_eff × K / (K + k_half)`` of the peak (a short
  K loop leaves each tile's prologue and epilogue a larger share), ``t0`` the kernel's ramp
  and tail, ``p`` how sharply a GEMM turns from memory- to compute-bound (a max at p = inf);
- decode attention (the fastest kernel measured): ``t0 + kv_bytes / (HBM × mem_eff) +
  ctx × per_pos`` (the last term: one sequence's keys walked in order, what split-KV kernels
  cannot spread when a batch has few sequences);
- prefill attention (fastest kernel): ``t0 + flops / (peak × comp_eff) + T × per_token`` (the
  last query tile of a causal prompt attends to all T keys: the critical path).

Each family is fitted by least squares on relative error, closed form (no optimiser): the
memory term on GEMMs with M <= 64, the compute term on M >= 1,024, ``p`` on a grid.
``compare`` sets the fitted model against a profile at the simulator's granularity (the step
model's operator groups) by shape regime; tests/sim/test_sim_opfit.py holds it to the issue's
bounds, and ``infermatrix sim opcheck`` prints it for any profile.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

US = 1e-6
DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
P_GRID = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 16.0)
DECODE_M, PREFILL_M = 128, 1024  # shape regimes: M <= 128 decode, M >= 1,024 prefill
# issue 32's bounds: median |error| per family, and the median of each shape regime
MAX_FAMILY_MEDIAN, MAX_REGIME_MEDIAN = 0.10, 0.20


@dataclass(frozen=True)
class GemmFit:
    t0_s: float
    mem_eff: float
    comp_eff: float
    k_half: float
    p: float

    def seconds(self, m: float, n: float, k: float, weight_bytes: float, peak: float,
                bw: float) -> float:
        """One GEMM of ``m`` rows against an ``n × k`` weight of ``weight_bytes``."""
        tm = weight_bytes / (bw * self.mem_eff)
        tc = 2.0 * m * n * k / (peak * self.comp_eff) * (1.0 + self.k_half / k)
        p = self.p
        return self.t0_s + (tm ** p + tc ** p) ** (1.0 / p)


@dataclass(frozen=True)
class DecodeAttentionFit:
    t0_s: float
    mem_eff: float
    per_pos_s: float  # per attended position of the longest sequence


@dataclass(frozen=True)
class PrefillAttentionFit:
    t0_s: float
    comp_eff: float
    per_token_s: float  # per key position of the critical (last) query tile


@dataclass(frozen=True)
class OperatorFit:
    """Fitted operator parameters; efficiencies are shares of ``peak_tflops`` / ``hbm_tbps``
    (the profiled GPU's datasheet)."""

    gemm: dict[str, GemmFit]
    attention_decode: DecodeAttentionFit
    attention_prefill: PrefillAttentionFit
    source: str

    def gemm_for(self, dtype: str) -> GemmFit:
        """The dtype's GEMM curve; a dtype not profiled (4-bit weights dequantised to bf16,
        int8) runs on the 16-bit one."""
        return self.gemm.get(dtype) or self.gemm.get("bf16") or next(iter(self.gemm.values()))

    def fitted_numbers(self) -> int:
        return 5 * len(self.gemm) + 3 + 3


def _ls_relative(columns: Sequence[Sequence[float]], t: Sequence[float]) -> np.ndarray:
    """Least squares of ``t ≈ Σ c_i × column_i`` on relative error (each row divided by t),
    coefficients clipped at 0 (a negative time is no physics)."""
    a = np.array(columns, dtype=float).T
    y = np.asarray(t, dtype=float)
    coef, *_ = np.linalg.lstsq(a / y[:, None], np.ones_like(y), rcond=None)
    return np.clip(coef, 0.0, None)


def _datasheet(profile: dict[str, Any]) -> tuple[dict[str, float], float]:
    sheet = profile["datasheet"]
    return {k: float(v) * 1e12 for k, v in sheet["tflops"].items()}, float(sheet["hbm_tbps"]) * 1e12


def gemm_points(profile: dict[str, Any], dtype: str) -> list[dict[str, Any]]:
    return [r for r in profile["results"]
            if r.get("section") == "gemm" and r.get("dtype") == dtype and r.get("median_ms")]


def _fit_gemm(points: list[dict[str, Any]], peak: float, bw: float, wbytes: float) -> GemmFit:
    t = [r["median_ms"] * 1e-3 for r in points]
    # compute-bound: prefill M, or a tiny profile's two largest M
    ms = sorted({r["m"] for r in points})
    top = min(PREFILL_M, ms[-2]) if len(ms) > 2 else math.inf
    small = [(r, s) for r, s in zip(points, t, strict=True) if r["m"] <= 64]
    big = [(r, s) for r, s in zip(points, t, strict=True) if r["m"] >= top]
    if len(small) < 2 or len(big) < 2:
        raise ValueError("a GEMM fit needs at least two shapes at M <= 64 and two of the "
                         "largest M (prefill)")
    t0, slope = _ls_relative([[1.0] * len(small), [r["n"] * r["k"] * wbytes for r, _ in small]],
                             [s for _, s in small])
    t0, mem_eff = float(t0), min(1.0, 1.0 / (max(float(slope), 1e-30) * bw))
    flops = [2.0 * r["m"] * r["n"] * r["k"] for r, _ in big]
    a, b = _ls_relative([flops, [f / r["k"] for f, (r, _) in zip(flops, big, strict=True)]],
                        [max(s - t0, 1e-9) for _, s in big])
    comp_eff = min(1.0, 1.0 / (max(float(a), 1e-30) * peak))
    k_half = float(b / a) if a > 0 else 0.0

    def loss(p: float) -> float:
        fit = GemmFit(t0, mem_eff, comp_eff, k_half, p)
        return sum(math.log(fit.seconds(r["m"], r["n"], r["k"], r["n"] * r["k"] * wbytes, peak,
                                        bw) / s) ** 2 for r, s in zip(points, t, strict=True))

    p = min(P_GRID, key=loss)
    return GemmFit(t0, mem_eff, comp_eff, k_half, p)


def fastest(results: Iterable[dict[str, Any]], section: str, keys: Sequence[str]
            ) -> list[dict[str, Any]]:
    """Per shape (``keys``), the fastest variant measured: the achievable figure."""
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in results:
        if r.get("section") != section or not r.get("median_ms"):
            continue
        key = tuple(r.get(k) for k in keys)
        if key not in best or r["median_ms"] < best[key]["median_ms"]:
            best[key] = r
    return list(best.values())


DECODE_KEYS = ("model", "batch", "ctx")
PREFILL_KEYS = ("model", "tokens")


def fit(profile: dict[str, Any]) -> OperatorFit:
    """The fitted operator parameters of a profile (profiles.load_profile's document)."""
    peaks, bw = _datasheet(profile)
    gemm = {}
    for dtype in sorted({r.get("dtype") for r in profile["results"] if r.get("section") == "gemm"}):
        if dtype in peaks and dtype in DTYPE_BYTES:
            gemm[dtype] = _fit_gemm(gemm_points(profile, dtype), peaks[dtype], bw, DTYPE_BYTES[dtype])
    if not gemm:
        raise ValueError("the profile has no GEMM timings")
    attn_peak = peaks.get("bf16") or peaks.get("fp16") or max(peaks.values())
    dec = fastest(profile["results"], "attn_decode", DECODE_KEYS)
    pre = fastest(profile["results"], "attn_prefill", PREFILL_KEYS)
    if len(dec) < 3 or len(pre) < 3:
        raise ValueError("the profile needs at least three decode and three prefill attention shapes")
    t0, slope, per_pos = _ls_relative(
        [[1.0] * len(dec), [r["kv_bytes"] for r in dec], [r["ctx"] for r in dec]],
        [r["median_ms"] * 1e-3 for r in dec])
    decode = DecodeAttentionFit(float(t0), min(1.0, 1.0 / (max(float(slope), 1e-30) * bw)),
                                float(per_pos))
    t0, slope, per_tok = _ls_relative(
        [[1.0] * len(pre), [r["flops"] for r in pre], [r["tokens"] for r in pre]],
        [r["median_ms"] * 1e-3 for r in pre])
    prefill = PrefillAttentionFit(float(t0), min(1.0, 1.0 / (max(float(slope), 1e-30) * attn_peak)),
                                  float(per_tok))
    return OperatorFit(gemm, decode, prefill, source=str(profile.get("source", "")))


# ----------------------------------------------------------------------- model vs measurement

@dataclass(frozen=True)
class Point:
    family: str
    regime: str
    label: str
    measured_s: float
    model_s: float

    @property
    def error(self) -> float:
        return self.model_s / self.measured_s - 1.0


def regime(m: int) -> str:
    return "decode" if m <= DECODE_M else "prefill" if m >= PREFILL_M else "mid"


def decode_attention_s(f: DecodeAttentionFit, kv_bytes: float, ctx: float, bw: float) -> float:
    return f.t0_s + kv_bytes / (bw * f.mem_eff) + ctx * f.per_pos_s


def prefill_attention_s(f: PrefillAttentionFit, flops: float, tokens: float, peak: float) -> float:
    return f.t0_s + flops / (peak * f.comp_eff) + tokens * f.per_token_s


def compare(profile: dict[str, Any], fitted: OperatorFit) -> list[Point]:
    """Every measured operator group the step model has, against the fitted model, on the
    profile's own GPU: attention projections (QKV + O summed, as the step model charges
    them), dense MLP (gate_up + down) and the LM head, per model, dtype and M; decode and
    prefill attention (fastest kernel)."""
    peaks, bw = _datasheet(profile)
    groups: dict[tuple[str, str, str, int], float] = defaultdict(float)
    model_s: dict[tuple[str, str, str, int], float] = defaultdict(float)
    family_of = {"qkv": "attention projections", "o": "attention projections",
                 "gate_up": "dense MLP", "down": "dense MLP", "lm_head": "LM head"}
    for r in profile["results"]:
        if r.get("section") != "gemm" or r.get("dtype") not in fitted.gemm or not r.get("median_ms"):
            continue
        family = family_of.get(r.get("name", ""))
        if family is None:
            continue
        key = (family, r["model"], r["dtype"], r["m"])
        groups[key] += r["median_ms"] * 1e-3
        g = fitted.gemm[r["dtype"]]
        model_s[key] += g.seconds(r["m"], r["n"], r["k"], r["n"] * r["k"] * DTYPE_BYTES[r["dtype"]],
                                  peaks[r["dtype"]], bw)
    points = [Point(fam, regime(m), f"{model} {dtype} M={m}", groups[key], model_s[key])
              for key in sorted(groups) for fam, model, dtype, m in [key]]
    attn_peak = peaks.get("bf16") or peaks.get("fp16") or max(peaks.values())
    for r in fastest(profile["results"], "attn_decode", DECODE_KEYS):
        points.append(Point("decode attention", regime(r["batch"]),
                            f"{r['model']} B={r['batch']} ctx={r['ctx']} ({r.get('variant')})",
                            r["median_ms"] * 1e-3,
                            decode_attention_s(fitted.attention_decode, r["kv_bytes"], r["ctx"], bw)))
    for r in fastest(profile["results"], "attn_prefill", PREFILL_KEYS):
        points.append(Point("prefill attention", regime(r["tokens"]),
                            f"{r['model']} T={r['tokens']} ({r.get('variant')})",
                            r["median_ms"] * 1e-3,
                            prefill_attention_s(fitted.attention_prefill, r["flops"], r["tokens"],
                                                attn_peak)))
    return points


@dataclass(frozen=True)
class FamilySummary:
    family: str
    points: int
    median_abs: float
    regimes: dict[str, float]  # regime -> median signed error

    def line(self) -> str:
        regimes = ", ".join(f"{k} {v:+.0%}" for k, v in sorted(self.regimes.items()))
        return (f"{self.family}: {self.points} shapes, median |error| {self.median_abs:.1%} "
                f"(by regime, median error: {regimes})")


def summarise(points: Sequence[Point]) -> list[FamilySummary]:
    out = []
    for family in dict.fromkeys(p.family for p in points):
        part = [p for p in points if p.family == family]
        by_regime: dict[str, list[float]] = defaultdict(list)
        for p in part:
            by_regime[p.regime].append(p.error)
        out.append(FamilySummary(family, len(part), statistics.median(abs(p.error) for p in part),
                                 {k: statistics.median(v) for k, v in by_regime.items()}))
    return out
