"""Capacity search in virtual time (capacity/virtual.py): closed-loop lanes as simulator
request chains, judged and searched by the same code as a real search."""

from __future__ import annotations

from pathlib import Path

from infermatrix.capacity.run import settings_of
from infermatrix.capacity.sources import source_of
from infermatrix.capacity.virtual import VirtualLevels, _Lanes, virtual_capacity
from infermatrix.catalog.loader import load_catalog
from infermatrix.catalog.schema import SloTierSpec
from infermatrix.client.tokenizer import load_tokenizer
from infermatrix.plan.measurement import CapacityMeasurement, SessionPlan

REPO = Path(__file__).resolve().parents[2]
RECIPE = "llama-3.1-70b-instruct/mi300x-vllm-fp8"  # prefix caching on, 8 GPUs
SESSIONS = SessionPlan(
    synthetic=["sessions=16", "turns=uniform:low=3,high=6", "system_prompt_tokens=2000",
               "user_tokens=200", "output_tokens=100", "tool_delay_s=0.5"],
    duration_s=30, warmup_s=5)
LOOSE = SloTierSpec(name="LOOSE", min_output_speed=25, max_ttft_s=10)
STRICT = SloTierSpec(name="STRICT", min_output_speed=40, max_ttft_s=2)


def measurement(**kw) -> CapacityMeasurement:
    return CapacityMeasurement(tiers=[LOOSE, STRICT], sessions=SESSIONS, max_concurrency=512,
                               resolution=8, **kw)


def test_lanes_are_closed_loop_conversations() -> None:
    tok = load_tokenizer(None)
    m = measurement()
    s = settings_of(m).__class__(**{**vars(settings_of(m)), "mid_session": False})
    lanes = _Lanes(source_of(SESSIONS, REPO, tok), tok, 16, 2, s)
    reqs, info = lanes.build(5)
    assert len(reqs) == 10 and [i.lane for i in info] == [0] * 5 + [1] * 5
    lane0 = reqs[:5]
    assert lane0[0].after is None and lane0[0].delay == 0.0
    for i in range(1, 5):  # each turn waits for the one before it, then its tool delay
        assert lane0[i].after == i - 1
        assert lane0[i].delay == 0.5
    first_session = [r for r, t in zip(lane0, info[:5], strict=True)
                     if t.conversation_id == info[0].conversation_id]
    # the context grows by the answer and the next user message; earlier blocks are reused
    assert first_session[0].prompt_tokens == 2200
    for a, b in zip(first_session, first_session[1:], strict=False):
        assert b.prompt_tokens == a.prompt_tokens + 100 + 200
        assert b.hashes[: len(a.hashes)] == a.hashes
    # two lanes share the system prompt's blocks, not their user turns
    shared = [x for x, y in zip(reqs[0].hashes, reqs[5].hashes, strict=False) if x == y]
    assert len(shared) == 2000 // 16


def test_level_keeps_every_lane_busy_through_the_window() -> None:
    tok = load_tokenizer(None)
    m = measurement()
    levels = VirtualLevels(load_catalog(REPO), RECIPE, source_of(SESSIONS, REPO, tok),
                           settings_of(m), tok, lambda _m: None)
    lv = levels.measure(8)
    assert lv["agents"] == 8 and lv["failed"] == 0 and lv["completed"] > 8 * 5
    # lanes never ran dry: requests kept ending until about when the window closed
    assert lv["window_s"] >= 0.9 * SESSIONS.duration_s
    assert lv["exact_output_len"] == lv["completed"]
    assert lv["cached_token_ratio"] > 0.5  # the conversation so far is reused turn by turn
    assert lv["avg_power_w"] is None


def test_lanes_planned_further_measure_the_same(monkeypatch) -> None:  # noqa: ANN001
    """Turns planned past the window's close are never sent (the client sends none either):
    lanes planned three times further give the same figures from the same simulation."""
    import infermatrix.capacity.virtual as virtual

    tok = load_tokenizer(None)

    def levels() -> VirtualLevels:
        return VirtualLevels(load_catalog(REPO), RECIPE, source_of(SESSIONS, REPO, tok),
                             settings_of(measurement()), tok, lambda _m: None)

    def figures(lv: dict) -> dict:
        return {k: v for k, v in lv.items() if k not in ("elapsed_s", "sim_steps", "sim_passes")}

    paced = levels()
    near = [paced.measure(8), paced.measure(24)]
    monkeypatch.setattr(virtual, "COVER_MARGIN", 3.0)
    far = levels()
    further = [far.measure(8), far.measure(24)]
    assert [lv["sim_steps"] for lv in further] == [lv["sim_steps"] for lv in near]
    assert [figures(lv) for lv in further] == [figures(lv) for lv in near]


def test_virtual_search_document() -> None:
    cat = load_catalog(REPO)
    doc = virtual_capacity(cat, RECIPE, "agentic-coding", measurement=measurement())
    assert doc["schema"] == "infermatrix-agentic-capacity"
    ident = doc["infermatrix"]
    assert ident["simulated"] is True and ident["launcher"] == "virtual"
    assert (ident["recipe"], ident["workload"]) == (RECIPE, "agentic-coding")
    tiers = {t["tier"]["name"]: t for t in doc["tiers"]}
    assert set(tiers) == {"LOOSE", "STRICT"}
    levels = {lv["concurrency"]: lv for lv in doc["levels"]}
    for name, t in tiers.items():
        assert t["bounded"] and t["passing_concurrency"] >= 1
        assert t["first_failing"] - t["passing_concurrency"] <= 8
        assert levels[t["passing_concurrency"]]["tiers"][name]["passed"]
        assert not levels[t["first_failing"]]["tiers"][name]["passed"]
        assert t["gpus"] == 8 and t["agents_per_gpu"] == t["passing_concurrency"] / 8
    assert tiers["LOOSE"]["passing_concurrency"] > tiers["STRICT"]["passing_concurrency"]
    # reproducible: the same search gives the same answer
    again = virtual_capacity(cat, RECIPE, "agentic-coding", measurement=measurement())
    assert [t["passing_concurrency"] for t in again["tiers"]] == [
        t["passing_concurrency"] for t in doc["tiers"]]


def test_time_budget_stops_the_search() -> None:
    doc = virtual_capacity(load_catalog(REPO), RECIPE, "agentic-coding",
                           measurement=measurement(time_budget_s=1e-6))
    # the first level is never measured once the budget is spent: nothing is claimed
    assert all(not t["bounded"] and t["passing_concurrency"] == 0 for t in doc["tiers"])
