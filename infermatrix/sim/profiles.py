"""Hardware profiles: one GPU's measured operator timings, as the simulator loads them.

A profile is a JSON document (format ``infermatrix-profile/1``, docs/sim.md "Hardware
profiles") written by ``infermatrix sim profile`` on the GPU it describes; the measured H100
table ships as data/profiles/h100-sxm-2026-11.json, and what ``sim profile`` measured on an
H100 and an H200 (2026-11-28) as h100-sxm-2026-11-28.json and h200-sxm-2026-11-28.json. A catalog hardware entry names one
(``profile: h100-sxm-2026-11`` for a built-in profile, or a path relative to the catalog
root), and the step model then times that hardware's GEMMs and attention with the curves
opfit.py fits to it. A measurement file of the same records in the ``opcheck/1`` schema (the
H100 table as measured) reads too, given the hardware whose datasheet it is scaled by.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from .opfit import OperatorFit, fit
from .tables import DATA_DIR

PROFILE_DIR = DATA_DIR / "profiles"
FORMAT = "infermatrix-profile/1"
READS = (FORMAT, "opcheck/1")
MAX_BYTES = 64 * 1024 * 1024  # a profile is a few hundred kB; refuse anything absurd


class ProfileError(ValueError):
    """A profile that cannot be used: one line naming the file and what is wrong."""


def profile_path(name: str, root: Path | None = None) -> Path:
    """Where a hardware entry's ``profile`` lives: a built-in name (data/profiles/NAME.json),
    else a path relative to the catalog root."""
    builtin = PROFILE_DIR / f"{name}.json"
    if "/" not in name and builtin.is_file():
        return builtin
    path = Path(name)
    if not path.is_absolute() and root is not None:
        path = root / path
    if not path.is_file():
        raise ProfileError(f"hardware profile {name!r} not found (neither "
                           f"{builtin.relative_to(DATA_DIR.parent.parent.parent)} nor {path})")
    return path


def load_profile(path: Path | str, datasheet: dict[str, Any] | None = None,
                 need_datasheet: bool = True) -> dict[str, Any]:
    """Read and check a profile; ``datasheet`` ({"tflops": {dtype: TFLOP/s}, "hbm_tbps": TB/s})
    for a file that does not carry its own (an opcheck/1 measurement file), or
    ``need_datasheet=False`` to read one without it (the caller adds it)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ProfileError(f"{path}: larger than {MAX_BYTES // 2**20} MiB, not a profile")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise ProfileError(f"{path}: expected a JSON object")
    kind = doc.get("format") or doc.get("schema")
    if kind not in READS:
        raise ProfileError(f"{path}: format {kind!r} is not one of {', '.join(READS)}")
    if datasheet is not None:
        doc = {**doc, "datasheet": datasheet}
    sheet = doc.get("datasheet")
    if (need_datasheet or sheet is not None) and not (isinstance(sheet, dict) and isinstance(sheet.get("tflops"), dict)
            and _positive(sheet.get("hbm_tbps"))
            and all(_positive(v) for v in sheet["tflops"].values())):
        raise ProfileError(f"{path}: datasheet: give tflops {{dtype: number}} and hbm_tbps "
                           "(the profiled GPU's peaks; --hardware names them)")
    results = doc.get("results")
    if not isinstance(results, list) or not results:
        raise ProfileError(f"{path}: results: expected a list of measurements")
    for i, r in enumerate(results):
        if not (isinstance(r, dict) and isinstance(r.get("section"), str)
                and _positive(r.get("median_ms"))):
            raise ProfileError(f"{path}: results[{i}]: needs a section and a positive median_ms")
    return doc


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def fit_file(path: Path | str) -> OperatorFit:
    """The fitted operator curves of a profile file (ProfileError when it cannot be used)."""
    return _fit_cached(str(Path(path).resolve()))


@lru_cache(maxsize=16)
def _fit_cached(path: str) -> OperatorFit:
    try:
        return fit(load_profile(path))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ProfileError):
            raise
        raise ProfileError(f"{path}: cannot fit operator curves: {exc}") from None
