"""Distributions as a workload writes them: ``5``, ``lognormal:median=150,sigma=1.2,max=2000``
or a mapping (``{kind: lognormal, median: 150}``).

The catalog only checks that one is well formed, so a typo is a catalog error with its line, and
keeps it as written. The client parses and samples it (``client.distributions.Dist``): the
client imports nothing else of the package, and the catalog nothing above it, so each side has
its own reading of the one format; tests/catalog/test_distributions.py holds them to the same
verdicts.
"""

from __future__ import annotations

from typing import Any

# kind -> the parameters it needs
NEEDS: dict[str, tuple[str, ...]] = {
    "constant": ("value",), "uniform": ("low", "high"), "lognormal": ("median",), "zipf": ("high",)}
PARAMETERS = ("value", "low", "high", "median", "sigma", "a", "min", "max")
# parameter -> (lowest value, whether that value itself is allowed)
LOWER: dict[str, tuple[float, bool]] = {"median": (0.0, False), "sigma": (0.0, True), "a": (0.0, False)}
FORMS = "a distribution is a number, text like lognormal:median=150,sigma=1.2 or a mapping"


def _as_mapping(value: Any) -> dict[str, Any]:
    """The written distribution as kind and parameters; ValueError with one line when it is none."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | dict):
        raise ValueError(FORMS)
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, int | float):
        return {"kind": "constant", "value": value}
    head, _, tail = value.strip().partition(":")
    if not tail:
        try:
            return {"kind": "constant", "value": float(head)}
        except ValueError:
            pass
    params: dict[str, Any] = {"kind": head.strip()}
    for item in (p.strip() for p in tail.split(",")):
        if not item:
            continue
        name, sep, number = item.partition("=")
        if not sep:
            raise ValueError(f"not a distribution: expected key=value in {value!r}, got {item!r}")
        try:
            params[name.strip()] = float(number)
        except ValueError as exc:
            raise ValueError(f"not a distribution: {exc}") from None
    return params


def check_distribution(value: Any) -> Any:
    """``value`` unchanged when it is a well-formed distribution; else ValueError (one line)."""
    params = _as_mapping(value)
    kind = params.pop("kind", "constant")
    if kind not in NEEDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(NEEDS)}")
    for name, number in params.items():
        if name not in PARAMETERS:
            raise ValueError(f"{name}: not a parameter of a distribution ({', '.join(PARAMETERS)})")
        if number is None:
            continue
        try:  # a mapping may hold a number as text, as a pydantic model would accept it
            if isinstance(number, bool):
                raise TypeError
            number = float(number)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: should be a number") from None
        floor, inclusive = LOWER.get(name, (float("-inf"), True))
        if number < floor or (number == floor and not inclusive):
            raise ValueError(f"{name}: should be greater than {'or equal to ' if inclusive else ''}"
                             f"{floor:g}")
    missing = [name for name in NEEDS[kind] if params.get(name) is None]
    if missing:
        raise ValueError(f"a {kind} distribution needs {', '.join(missing)}")
    low = params.get("low")
    if kind in ("uniform", "zipf") and float(1.0 if low is None else low) > float(params["high"]):
        raise ValueError("low must not exceed high")
    return value
