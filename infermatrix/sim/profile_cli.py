"""`infermatrix sim profile` and `infermatrix sim opcheck`: measure a GPU's operator table into
a hardware profile, and set the fitted operator model against any profile.

    infermatrix sim profile -o matrix/profiles/h200-mybox.json [--hardware H200]
    infermatrix sim profile --tiny -o /tmp/p.json --python .venv-vllm/bin/python
    infermatrix sim opcheck infermatrix/sim/data/profiles/h100-sxm-2026-11.json

The measuring runs opmeasure.py as a script in a child process of the interpreter
``--python`` names (default: this one): torch is an optional extra and often lives in another
virtual environment (which need not have the package's own dependencies), and the child keeps
CUDA's state out of this process.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..catalog.loader import load_catalog
from .config import SimConfigError
from .names import resolve
from .opfit import MAX_FAMILY_MEDIAN, MAX_REGIME_MEDIAN, FamilySummary, compare, fit, summarise
from .profiles import FORMAT, fit_file, load_profile, profile_path

MEASURE = Path(__file__).resolve().with_name("opmeasure.py")
MAX_BUDGET_S = 290.0  # the bound: a profile in under 5 minutes on one GPU


def add_arguments(sub: Any) -> None:
    prof = sub.add_parser("profile", help="measure this GPU's operator table into a hardware "
                                          "profile (needs torch: pip install '.[profile]')")
    prof.add_argument("-o", "--output", type=Path, required=True, help="profile file to write")
    prof.add_argument("--hardware", help="catalog hardware whose datasheet the efficiencies are "
                                         "shares of (default: named after the GPU; CPU with --tiny)")
    prof.add_argument("--tiny", action="store_true",
                      help="a tiny model on the CPU in seconds: the same code, for tests")
    prof.add_argument("--python", default=sys.executable,
                      help="interpreter with torch to measure with (default: this one)")
    prof.add_argument("--budget-s", type=float, default=240.0,
                      help=f"measuring time limit, at most {MAX_BUDGET_S:g} s (default 240)")
    prof.add_argument("--catalog-root", type=Path, help="catalog root (default: this checkout)")
    chk = sub.add_parser("opcheck", help="the fitted operator model against a profile's "
                                         "measurements, by family and shape regime")
    chk.add_argument("profile", type=Path, help="a profile (or an opcheck/1 measurement file)")
    chk.add_argument("--hardware", help="catalog hardware whose model and datasheet to use "
                                        "(default: the file's, or the one its device names)")
    chk.add_argument("--refit", action="store_true",
                     help="fit the operator model to the file itself instead")
    chk.add_argument("--check", action="store_true",
                     help="exit 1 unless every family is within the bounds (median |error| "
                          "<= 10%%, each shape regime's median <= 20%%)")
    chk.add_argument("--catalog-root", type=Path, help="catalog root (default: this checkout)")


def _datasheet(catalog_root: Path | None, name: str) -> tuple[str, dict[str, Any]]:
    cat = load_catalog(catalog_root)
    found = resolve(cat.hardware, name, "hardware")
    if found is None:
        raise SimConfigError(f"unknown hardware {name!r} (see matrix/hardware.yaml: "
                             f"{', '.join(cat.hardware)})")
    hw = cat.hardware[found]
    return found, {"tflops": dict(hw.tflops), "hbm_tbps": hw.hbm_tbps,
                   "source": f"matrix/hardware.yaml {found}"}


def _guess_hardware(device: str, names: list[str]) -> str | None:
    """The catalog entry a device name ("NVIDIA H100 80GB HBM3") names, longest match first."""
    words = device.upper().replace("-", " ").split()
    for name in sorted(names, key=len, reverse=True):
        if name.upper() in words:
            return name
    return None


def profile(args: argparse.Namespace) -> int:
    budget = args.budget_s
    if not (math.isfinite(budget) and 0 < budget <= MAX_BUDGET_S):
        raise SimConfigError(f"--budget-s must be within (0, {MAX_BUDGET_S:g}], got {budget}")
    if not Path(args.python).is_file():
        raise SimConfigError(f"--python {args.python}: no such interpreter")
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.json"
        # run as a script: the package's own dependencies need not be in that interpreter
        cmd = [args.python, str(MEASURE), "--out", str(raw), "--budget-s", str(budget)] + (
            ["--tiny"] if args.tiny else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=budget + 120, check=False)
        except subprocess.TimeoutExpired:
            raise SimConfigError(f"measuring ran past {budget + 120:g} s and was stopped") from None
        if proc.returncode != 0 or not raw.is_file():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            if "No module named 'torch'" in proc.stderr:
                tail = (f"{args.python} has no torch: pip install 'infermatrix[profile]', or "
                        "name an interpreter that has it with --python")
            if raw.is_file():  # the sections measured before the fault are kept, not lost
                kept = _keep_beside(args.output, ".partial.json", raw.read_text(encoding="utf-8"))
                tail += f" (what it had measured is kept in {kept})"
            raise SimConfigError(f"measuring failed: {tail}")
        doc = json.loads(raw.read_text(encoding="utf-8"))
    cat_names = list(load_catalog(args.catalog_root).hardware)
    name = args.hardware or ("CPU" if args.tiny else _guess_hardware(doc["device"], cat_names))
    if name is None:
        raise SimConfigError(f"no catalog hardware is named in {doc['device']!r}: give --hardware")
    name, sheet = _datasheet(args.catalog_root, name)
    out = {"format": FORMAT, "hardware": name, "datasheet": sheet,
           "source": f"infermatrix sim profile on {doc['device']}, {doc['created']}",
           "provenance": "measured by `infermatrix sim profile`" + (" --tiny (CPU, tests only)"
                                                                   if args.tiny else ""),
           **{k: v for k, v in doc.items() if k != "schema"}}
    try:
        fitted = fit(out)  # a profile the simulator cannot fit is not written ...
    except (KeyError, ValueError) as exc:
        kept = _keep_beside(args.output, ".unfitted.json", json.dumps(out, indent=1) + "\n")
        raise SimConfigError(f"the measurements cannot be fitted ({exc}); they are kept in "
                             f"{kept}") from None
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"profile: {args.output} ({len(out['results'])} measurements on {doc['device']} in "
          f"{doc['elapsed_s']} s; {len(doc['skipped'])} skipped, {len(doc['errors'])} refused)")
    _print_fit(out, fitted)
    print(f"use it: `profile: {args.output}` in matrix/hardware.yaml's {name} entry")
    return 0


def _keep_beside(output: Path, suffix: str, text: str) -> Path:
    """Measurements that cannot become the profile (``... nor lost``), beside where it would be."""
    kept = output.with_name(output.stem + suffix)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(text, encoding="utf-8")
    return kept


def _print_fit(doc: dict[str, Any], fitted: Any) -> list[FamilySummary]:
    for dtype, g in fitted.gemm.items():
        print(f"  gemm {dtype}: t0 {g.t0_s * 1e6:.1f} us, HBM {g.mem_eff:.2f}, compute "
              f"{g.comp_eff:.2f} x K/(K+{g.k_half:.0f}), p {g.p:g}")
    d, p = fitted.attention_decode, fitted.attention_prefill
    print(f"  decode attention: t0 {d.t0_s * 1e6:.1f} us, HBM {d.mem_eff:.2f}, "
          f"{d.per_pos_s * 1e9:.2f} ns a position")
    print(f"  prefill attention: t0 {p.t0_s * 1e6:.1f} us, compute {p.comp_eff:.2f}, "
          f"{p.per_token_s * 1e9:.2f} ns a key")
    summaries = summarise(compare(doc, fitted))
    for s in summaries:
        print("  " + s.line())
    return summaries


def opcheck(args: argparse.Namespace) -> int:
    """The operator model the simulator runs for a hardware (the fit of the profile its
    catalog entry names) against the measurements of a file, on that hardware's datasheet:
    how a model fitted on one GPU carries over to another. The hardware: ``--hardware``, else
    the file's own, else the one its device name names. ``--refit``: fitted to the file
    itself instead. ``--check``: exit 1 unless every family holds the issue's bounds."""
    cat = load_catalog(args.catalog_root)
    doc = load_profile(args.profile, need_datasheet=False)
    name = args.hardware or doc.get("hardware") or _guess_hardware(str(doc.get("device", "")),
                                                                   list(cat.hardware))
    if name is None:
        raise SimConfigError(f"no catalog hardware is named in {doc.get('device')!r}: give --hardware")
    name, sheet = _datasheet(args.catalog_root, name)
    doc = {**doc, "datasheet": sheet}
    hw = cat.hardware[name]
    if args.refit:
        fitted = fit(doc)
        print(f"{args.profile} ({doc.get('device', '?')}): operator model fitted to it")
    else:
        if not hw.profile:
            raise SimConfigError(f"{name} names no profile in matrix/hardware.yaml (--refit "
                                 "fits one to the file)")
        fitted = fit_file(profile_path(hw.profile, cat.root))
        print(f"{args.profile} ({doc.get('device', '?')}) against the operator model the "
              f"simulator runs for {name} ({hw.profile}), on {name}'s datasheet")
    summaries = _print_fit(doc, fitted)
    missed = [s.family for s in summaries if s.median_abs > MAX_FAMILY_MEDIAN
              or any(abs(v) > MAX_REGIME_MEDIAN for v in s.regimes.values())]
    if missed:
        print(f"outside the bounds (median |error| <= {MAX_FAMILY_MEDIAN:.0%} a family, "
              f"<= {MAX_REGIME_MEDIAN:.0%} a regime): {', '.join(missed)}")
    return 1 if args.check and missed else 0
