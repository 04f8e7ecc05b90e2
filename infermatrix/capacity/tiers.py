"""SLO tiers: what a concurrency level must meet for every agent to count as served.

A level passes a tier when the 25th percentile of per-request output speed is at least the
tier's speed (three agents in four get at least that speed) and the 95th percentile of TTFT is
within the tier's limit, and its error rate is within the allowed share. Percentiles are over
the level's measured requests (see infermatrix.client.sessions)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..plan.measurement import DEFAULT_TIERS as PLANNED_DEFAULT_TIERS


class SloTier(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    min_output_speed: float = Field(
        gt=0, description="P25 output speed floor, tokens/s per request"
    )
    max_ttft_s: float = Field(gt=0, description="P95 time to first token ceiling, seconds")

    @classmethod
    def parse(cls, text: str) -> SloTier:
        """``NAME=SPEED:TTFT_S`` (``SLO20=20:10``)."""
        name, eq, rest = text.partition("=")
        speed, colon, ttft = rest.partition(":")
        if not (eq and colon):
            raise ValueError(f"an SLO tier is NAME=SPEED:TTFT_SECONDS, got {text!r}")
        return cls(name=name.strip(), min_output_speed=float(speed), max_ttft_s=float(ttft))

    def scaled(self, time_scale: float) -> SloTier:
        """The tier in the wall-clock units of a simulation running ``time_scale`` × faster."""
        return SloTier(
            name=self.name,
            min_output_speed=self.min_output_speed * time_scale,
            max_ttft_s=self.max_ttft_s / time_scale,
        )


# The AA-AgentPerf tiers published for DeepSeek V4 Pro (one definition, the planner's).
SLO20, SLO60 = (SloTier.model_validate(t.model_dump()) for t in PLANNED_DEFAULT_TIERS)
DEFAULT_TIERS: tuple[SloTier, ...] = (SLO20, SLO60)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str  # why it failed, '' when it passed

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason}


def judge(level: dict[str, Any], tier: SloTier, max_error_rate: float = 0.05) -> Verdict:
    """``level`` is a session-level summary (``p25_output_speed``, ``p95_ttft_ms``, ...)."""
    speed, ttft_ms = level.get("p25_output_speed"), level.get("p95_ttft_ms")
    reasons = []
    if not level.get("completed"):
        reasons.append("no measured request completed")
    if level.get("error_rate", 0.0) > max_error_rate:
        reasons.append(f"error rate {level['error_rate']:.1%} > {max_error_rate:.0%}")
    if speed is None or speed < tier.min_output_speed:
        reasons.append(f"P25 output speed {_fmt(speed)} < {tier.min_output_speed:g} tok/s")
    if ttft_ms is None or ttft_ms > tier.max_ttft_s * 1000.0:
        reasons.append(f"P95 TTFT {_fmt(ttft_ms and ttft_ms / 1000.0)} s > {tier.max_ttft_s:g} s")
    return Verdict(not reasons, "; ".join(reasons))


def level_line(agents: int, level: dict[str, Any], tiers: Sequence[SloTier],
               max_error_rate: float, time_scale: float = 1.0, note: str = "") -> str:
    """One measured level for the log: speed and TTFT in real units (a simulation run
    ``time_scale`` × faster is measured ``time_scale`` × fast: divided back here), and each
    tier's verdict (``tiers`` in the units the level was measured in)."""
    speed, ttft_ms = level.get("p25_output_speed"), level.get("p95_ttft_ms")
    verdicts = ", ".join(f"{t.name} {'pass' if judge(level, t, max_error_rate).passed else 'FAIL'}"
                         for t in tiers)
    cached = level.get("cached_token_ratio")
    return (f"  agents={agents:<5} P25 speed {_fixed(speed and speed / time_scale)} tok/s, "
            f"P95 TTFT {_fixed(ttft_ms and ttft_ms * time_scale)} ms, {level.get('completed', 0)} "
            f"ok / {level.get('failed', 0)} failed"
            + (f", cached {cached:.2f}" if cached is not None else "")
            + (f" ({note})" if note else "") + (f": {verdicts}" if verdicts else ""))


def _fixed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0f}"


def tiers_from(specs: Sequence[str | dict[str, Any] | SloTier]) -> list[SloTier]:
    """Tiers from flag text, mappings or tiers; ValueError with one readable line."""
    out = []
    for spec in specs:
        try:
            if isinstance(spec, SloTier):
                out.append(spec)
            elif isinstance(spec, str):
                out.append(SloTier.parse(spec))
            else:
                out.append(SloTier.model_validate(spec))
        except ValidationError as e:
            err = e.errors()[0]
            raise ValueError(
                f"SLO tier {spec!r}: {'.'.join(map(str, err['loc']))} {err['msg'].lower()}"
            ) from None
    names = [t.name for t in out]
    if len(set(names)) != len(names):
        raise ValueError(f"SLO tier names must be unique, got {names}")
    return out


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"
