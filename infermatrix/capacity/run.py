"""Capacity search against a running server: each level is a closed-loop agent run, with a
drain and a cache-bust before it, so a level never inherits the previous one's queue or warm
prefixes.

Cache-bust is done twice over: every level salts the start of every prompt (works on any
engine), and where the engine has a flush endpoint it is called too (vLLM needs
VLLM_SERVER_DEV_MODE=1; TensorRT-LLM has none, the salt still works)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from time import perf_counter
from typing import Any

from ..client import eventloop
from ..client.affinity import NONE, Affinity
from ..client.config import BenchConfig
from ..client.http import HTTPClient
from ..client.request import make_client
from ..client.runner import resolve_model
from ..client.session_sources import SessionSource
from ..client.sessions import LevelOutcome, LevelPlan, run_level, summarize
from ..client.tokenizer import Tokenizer, load_tokenizer
from ..plan.measurement import CapacityMeasurement
from ..progress import Progress
from .eta import Tracked
from .normalise import Footprint, normalise
from .search import CapacitySearch, SearchResult
from .tiers import SloTier, judge, level_line

SCHEMA = "infermatrix-agentic-capacity"
SCHEMA_VERSION = 1

# (t0, t1) perf_counter → mean total GPU power in W over that span, or None
PowerProbe = Callable[[float, float], float | None]
# what runs on the server before each level (drain, flush); its record goes into the level
Between = Callable[[], dict[str, Any]]


@dataclass
class CapacitySettings:
    duration_s: float = 120.0  # measured window per level
    warmup_s: float = 30.0
    mid_session: bool = True
    start: int = 1
    max_concurrency: int = 4096
    resolution: int = 1
    resolution_pct: float = 0.0  # or within this percent of the passing level (0: absolute only)
    max_error_rate: float = 0.05
    flush_cache: bool = True
    drain_timeout_s: float = 120.0
    max_context_tokens: int | None = None
    seed: int = 0
    time_scale: float = 1.0  # of a simulated engine: tool delays shrink with it
    time_budget_s: float | None = None  # no new level once the search has run this long

    def level_plan(self, agents: int, salt: str = "lvl0") -> LevelPlan:
        """One level of ``agents`` under these settings (the client's and the virtual's)."""
        return LevelPlan(agents=agents, duration_s=self.duration_s, warmup_s=self.warmup_s,
                         mid_session=self.mid_session, seed=self.seed, salt=salt,
                         max_context_tokens=self.max_context_tokens, time_scale=self.time_scale)


@dataclass
class Target:
    """Where to send load and how to treat the server between levels."""

    cfg: BenchConfig
    affinity: Affinity = NONE
    power: PowerProbe | None = None
    between: Between | None = None  # the job loop's drain and flush (launch/loop.py)


class LevelRunner:
    """``await runner(concurrency)`` → the level's summary (used by CapacitySearch)."""

    def __init__(
        self,
        target: Target,
        source: SessionSource,
        settings: CapacitySettings,
        client: HTTPClient,
        model: str,
        tok: Tokenizer,
        log: Callable[[str], None] | None = None,
        tiers: Sequence[SloTier] = (),
    ) -> None:
        self.t, self.source, self.s = target, source, settings
        self.tiers = tiers  # each level's verdicts in the log
        self.client, self.model, self.tok = client, model, tok
        self.log = log or (lambda _m: None)
        self.run_salt = secrets.token_hex(3)  # a second search on the same server starts cold too
        self.outcomes: dict[int, LevelOutcome] = {}

    async def __call__(self, agents: int) -> dict[str, Any]:
        between = await asyncio.to_thread(self.t.between) if self.t.between else {}
        plan = self.s.level_plan(agents, salt=f"x{self.run_salt}L{len(self.outcomes)}c{agents}")
        t0 = perf_counter()
        out = await run_level(
            self.t.cfg,
            self.source,
            plan,
            self.t.affinity,
            tok=self.tok,
            client=self.client,
            model=self.model,
        )
        t1 = perf_counter()
        self.outcomes[agents] = out
        summary = summarize(out)
        summary["between"] = between
        summary["elapsed_s"] = t1 - t0
        summary["avg_power_w"] = self.t.power(t0 + self.s.warmup_s, t1) if self.t.power else None
        scale = f", {self.s.time_scale:g}x time" if self.s.time_scale != 1 else ""
        self.log(level_line(agents, summary, self.tiers, self.s.max_error_rate,
                            self.s.time_scale, f"{t1 - t0:.0f} s{scale}"))
        return summary


async def find_capacity(
    target: Target,
    source: SessionSource,
    tiers: Sequence[SloTier],
    deployment: Footprint,
    settings: CapacitySettings | None = None,
    *,
    log: Callable[[str], None] | None = None,
    meta: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Search every tier; return the capacity document (schema ``infermatrix-agentic-capacity``).
    ``progress``: a bar over the levels, its total estimated as the search goes (eta.py)."""
    s = settings or CapacitySettings()
    tok = load_tokenizer(target.cfg.tokenizer)
    async with make_client(target.cfg.timeouts) as client:
        model = await resolve_model(client, target.cfg)
        runner: Any = LevelRunner(target, source, s, client, model, tok,
                                  progress.write if progress and log else log, tiers)
        if progress is not None:
            runner = Tracked(runner, tiers, s.max_error_rate, progress, start=s.start,
                             max_concurrency=s.max_concurrency, resolution=s.resolution,
                             resolution_pct=s.resolution_pct)
        search = CapacitySearch(
            runner,
            tiers,
            start=s.start,
            max_concurrency=s.max_concurrency,
            resolution=s.resolution,
            resolution_pct=s.resolution_pct,
            max_error_rate=s.max_error_rate,
            time_budget_s=s.time_budget_s,
        )
        result = await search.run()
    return capacity_document(result, deployment, s, target, source, model, meta or {})


def settings_of(m: CapacityMeasurement, time_scale: float = 1.0) -> CapacitySettings:
    """A job's capacity measurement as the search's settings."""
    ses = m.sessions
    return CapacitySettings(
        duration_s=ses.duration_s, warmup_s=ses.warmup_s, mid_session=ses.mid_session,
        start=m.start, max_concurrency=m.max_concurrency, resolution=m.resolution,
        resolution_pct=m.resolution_pct or 0.0, max_error_rate=m.max_error_rate, max_context_tokens=ses.max_context_tokens,
        seed=ses.seed, time_scale=time_scale, time_budget_s=m.time_budget_s)


def find_capacity_sync(*args: Any, **kw: Any) -> dict[str, Any]:
    return eventloop.run(find_capacity(*args, **kw))


def capacity_document(
    result: SearchResult,
    deployment: Footprint,
    s: CapacitySettings,
    target: Target,
    source: SessionSource,
    model: str,
    meta: dict[str, Any],
) -> dict[str, Any]:
    """The capacity document (one schema for a real and a virtual-time search)."""
    tiers = []
    for tr in result.tiers:
        at = result.levels.get(tr.passing_concurrency, {})
        tiers.append(
            {
                "tier": tr.tier.model_dump(),
                "passing_concurrency": tr.passing_concurrency,
                "first_failing": tr.first_failing,
                "bounded": tr.bounded,
                "searched": sorted(tr.verdicts),
                **normalise(tr.passing_concurrency, deployment, at.get("avg_power_w")),
            }
        )
    levels = [
        {
            "concurrency": c,
            **lv,
            "tiers": {
                t.name: judge(lv, t, s.max_error_rate).as_dict()
                for t in (r.tier for r in result.tiers)
            },
        }
        for c, lv in result.levels.items()
    ]
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "model_id": model,
        "source": source.name,
        "affinity": target.affinity.describe(),
        "endpoint": target.cfg.url,
        "settings": asdict(s),
        "tiers": tiers,
        "levels": levels,
        **meta,
    }
