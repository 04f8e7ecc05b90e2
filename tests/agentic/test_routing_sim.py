"""Acceptance: on the simulated engine, conversation routing over several prefill workers
passes a higher concurrency than round robin, and prefix reuse shows in cached tokens.

Both recipes (benchmarks/test-agentic/) are the same disaggregated deployment, 4 context
workers + 1 generation worker, differing only in the orchestrator's router type. Round robin
sends a conversation's next turn to a worker that mostly lacks its context, so it prefills the
whole conversation again and TTFT grows with load much sooner."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from infermatrix.capacity import CapacitySettings, SloTier, Target, find_capacity_sync
from infermatrix.capacity.recipe import affinity_of, footprint_of
from infermatrix.catalog.loader import Catalog, load_catalog
from infermatrix.client import BenchConfig
from infermatrix.client.session_sources import SyntheticSource, parse_synthetic
from infermatrix.client.tokenizer import WordTokenizer
from infermatrix.launch.backends.base import Launched
from infermatrix.launch.deploy import start_sim
from infermatrix.launch.drain import drain, flush_prefix_cache
from infermatrix.launch.readiness import wait_ready

SCALE = 5.0  # the simulated engine runs 5× faster; tiers and tool delays follow
TIER = SloTier(name="TTFT-bound", min_output_speed=20.0, max_ttft_s=0.8)  # model seconds
SESSIONS = [
    "turns=8",
    "system_prompt_tokens=2000",
    "user_tokens=1500",
    "output_tokens=20",
    "tool_delay_s=0.5",
    "sessions=64",
]


@contextmanager
def simulated(cat: Catalog, recipe: str, log_dir: Path, time_scale: float) -> Iterator[Launched]:
    """The simulated engine standing in for ``recipe``, ready to serve; stopped on exit."""
    launched = start_sim(cat, recipe, log_dir, ["--time-scale", str(time_scale),
                                                "--log-level", "WARNING"])
    try:
        wait_ready(launched.health_urls, launched.base_url, launched.canary, launched.procs, 120)
        yield launched
    finally:
        launched.stop()


def capacity(recipe: str, tmp: Path) -> dict:
    cat = load_catalog()
    settings = CapacitySettings(
        duration_s=1.5, warmup_s=0.5, start=2, max_concurrency=8, time_scale=SCALE
    )
    with simulated(cat, recipe, tmp, SCALE) as launched:
        target = Target(
            BenchConfig(
                backend="openai-chat",
                base_url=launched.base_url,
                model=launched.served_model,
                ignore_eos=True,
            ),
            affinity=affinity_of(cat, recipe),
            between=lambda: {"drain": drain(launched.worker_urls),
                             "flush": flush_prefix_cache(launched.worker_urls, "sim")},
        )
        source = SyntheticSource(parse_synthetic(SESSIONS), WordTokenizer())
        return find_capacity_sync(
            target, source, [TIER.scaled(SCALE)], footprint_of(cat, recipe), settings
        )


def test_conversation_routing_beats_round_robin(tmp_path: Path) -> None:
    conv = capacity("test-agentic/h100-trtllm-fp8-4ctx-1gen-conversation", tmp_path / "conv")
    rr = capacity("test-agentic/h100-trtllm-fp8-4ctx-1gen-round-robin", tmp_path / "rr")
    c, r = conv["tiers"][0], rr["tiers"][0]
    assert conv["affinity"] == "body disaggregated_params.conversation_id"
    assert c["gpus"] == r["gpus"] == 12  # 4 × TP2 context + 1 × TP4 generation: every pool counts
    assert c["passing_concurrency"] > r["passing_concurrency"], (conv["levels"], rr["levels"])
    assert r["bounded"]  # round robin failed within the searched range
    # prefix reuse: most prompt tokens come from the cache with affinity, far fewer without
    ratio = lambda doc: min(lv["cached_token_ratio"] for lv in doc["levels"])  # noqa: E731
    assert ratio(conv) > 0.75 > ratio(rr) + 0.1
