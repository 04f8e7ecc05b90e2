"""Passing concurrency per GPU (every pool's GPUs), per kW / MW of measured power, per $/hour."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Footprint:
    """What the numbers are divided by. ``gpus`` counts all prefill and decode GPUs."""

    gpus: int
    usd_per_gpu_hour: float | None = None

    @property
    def usd_per_hour(self) -> float | None:
        return self.gpus * self.usd_per_gpu_hour if self.usd_per_gpu_hour else None


def normalise(agents: int, dep: Footprint, avg_power_w: float | None = None) -> dict[str, Any]:
    """``avg_power_w``: mean total power of all the deployment's GPUs at the passing level, when
    measured; never estimated from TDP (an estimate would rank hardware by its datasheet)."""
    kw = avg_power_w / 1000.0 if avg_power_w else None
    usd = dep.usd_per_hour
    return {
        "agents": agents,
        "gpus": dep.gpus,
        "agents_per_gpu": agents / dep.gpus if dep.gpus else None,
        "avg_power_w": avg_power_w,
        "agents_per_kw": agents / kw if kw else None,
        "agents_per_mw": agents / kw * 1000.0 if kw else None,
        "usd_per_hour": usd,
        "agents_per_usd_hour": agents / usd if usd else None,
        "deployment": asdict(dep),
    }
