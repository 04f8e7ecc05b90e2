"""A distribution of one quantity of a synthetic session (turns, lengths, tool delays),
parsed from a flag or a catalog value and sampled from a seeded RNG. (catalog/distributions.py
checks the written form without the client.)"""

from __future__ import annotations

import math
import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator


class Dist(BaseModel):
    """A distribution of one quantity. Integer quantities round the draw.

    constant: ``value``; uniform: ``low``..``high``; lognormal: ``median`` and ``sigma`` (of the
    underlying normal); zipf: P(k) ∝ k^-a over ``low``..``high`` (default low 1). ``min`` / ``max``
    clamp any draw. Written in a flag as ``lognormal:median=150,sigma=1.2,max=2000`` or ``5``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["constant", "uniform", "lognormal", "zipf"] = "constant"
    value: float | None = None
    low: float | None = None
    high: float | None = None
    median: float | None = Field(None, gt=0)
    sigma: float = Field(1.0, ge=0)
    a: float = Field(1.2, gt=0)
    min: float | None = None
    max: float | None = None
    _zipf_cum: list[float] | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _complete(self) -> Dist:
        need = {
            "constant": ("value",),
            "uniform": ("low", "high"),
            "lognormal": ("median",),
            "zipf": ("high",),
        }[self.kind]
        missing = [n for n in need if getattr(self, n) is None]
        if missing:
            raise ValueError(f"a {self.kind} distribution needs {', '.join(missing)}")
        low = self.low if self.low is not None else 1.0
        if self.kind in ("uniform", "zipf") and low > self.high:  # type: ignore[operator]
            raise ValueError("low must not exceed high")
        return self

    @classmethod
    def parse(cls, text: str | float | int | dict[str, Any] | Dist) -> Dist:
        """From a number, a dict, or ``kind:key=value,...``."""
        if isinstance(text, Dist):
            return text
        if isinstance(text, int | float):
            return cls(kind="constant", value=float(text))
        if isinstance(text, dict):
            return cls.model_validate(text)
        text = text.strip()
        try:
            return cls(kind="constant", value=float(text))
        except ValueError:
            pass
        kind, _, rest = text.partition(":")
        args: dict[str, Any] = {"kind": kind.strip()}
        for part in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, val = part.partition("=")
            if not eq:
                raise ValueError(f"expected key=value in {text!r}, got {part!r}")
            args[key.strip()] = float(val)
        return cls.model_validate(args)

    def sample(self, rng: random.Random) -> float:
        if self.kind == "constant":
            x = float(self.value)  # type: ignore[arg-type]
        elif self.kind == "uniform":
            x = rng.uniform(self.low, self.high)  # type: ignore[arg-type]
        elif self.kind == "lognormal":
            x = float(self.median) * math.exp(rng.gauss(0.0, self.sigma))  # type: ignore[arg-type]
        else:
            lo = int(self.low or 1)
            if self._zipf_cum is None:
                total, cum = 0.0, []
                for k in range(lo, int(self.high) + 1):  # type: ignore[arg-type]
                    total += k**-self.a
                    cum.append(total)
                self._zipf_cum = cum
            x = float(lo + rng.choices(range(len(self._zipf_cum)), cum_weights=self._zipf_cum)[0])
        if self.min is not None:
            x = max(self.min, x)
        if self.max is not None:
            x = min(self.max, x)
        return x

    def sample_int(self, rng: random.Random, at_least: int = 0) -> int:
        return max(at_least, round(self.sample(rng)))
