"""Issue 29: every kind of measurement runs through one loop (launch/loop.py), on a real server
and in virtual time alike. Each test here is one of the ways the five old paths disagreed: a
wrong or missing number on a real fleet, measured for real (the simulated engine over
loopback, the virtual-time kernel, the history store on disk)."""

from __future__ import annotations

import json
import sqlite3
from functools import partial
from pathlib import Path

from infermatrix.catalog.loader import load_catalog
from infermatrix.cli import main
from infermatrix.launch.deploy import start_sim
from infermatrix.plan.jobs import make_job
from infermatrix.results import agentic

SIM_RECIPE = "deepseek-r1-0528/h200-sglang-fp8"  # a fast simulated engine in real time
TINY = {"tier": ("EASY", 1, 60), "duration_s": 2, "warmup_s": 0.5, "sessions": 8, "turns": 3,
        "system_prompt_tokens": 64, "user_tokens": 32, "output_tokens": 16, "tool_delay_s": 0.05}


def _sweep(root: Path, name: str, recipe: str, workload: str, extra: str) -> None:
    (root / "matrix" / "sweeps" / f"{name}.yaml").write_text(
        f"description: {name}\nentries:\n  - recipes: [{recipe}]\n    workloads: [{workload}]\n"
        f"{extra}")


def _only(out: Path, pattern: str) -> Path:
    (path,) = out.glob(pattern)
    return path


def test_a_capacity_search_on_a_server_keeps_its_time_budget(
        catalog_copy: Path, tmp_path: Path, add_agentic_workload) -> None:  # noqa: ANN001
    """The planner sizes a capacity job's timeout by its time budget: the search on a launched
    server must stop measuring once the budget is spent, as the virtual one does."""
    add_agentic_workload("agentic-tiny", **TINY)
    _sweep(catalog_copy, "budget", SIM_RECIPE, "agentic-tiny",
           "    capacity: {start: 1, max_concurrency: 64, time_budget_s: 1}\n")
    out = tmp_path / "results"
    assert main(["run", "--recipe", SIM_RECIPE, "--workload", "agentic-tiny", "--engine", "sim",
                 "--root", str(catalog_copy), "--output-dir", str(out), "--run-id", "b1"]) == 0
    doc = json.loads(_only(out, "b1/jobs/*/capacity.json").read_text())
    # the first level (2.5 s) spends the 1 s budget: no second level, the tier left unbounded
    assert [lv["concurrency"] for lv in doc["levels"]] == [1]
    (tier,) = doc["tiers"]
    assert (tier["passing_concurrency"], tier["bounded"]) == (1, False)
    assert doc["infermatrix"]["launcher"] == "local" and doc["settings"]["time_budget_s"] == 1


def test_incremental_planning_knows_a_capacity_jobs_freshness(
        catalog_copy: Path, tmp_path: Path, capsys, add_agentic_workload) -> None:  # noqa: ANN001
    """A capacity job measured and collected is fresh: the next incremental plan skips it (it
    used to re-run every night), and plans it again once its search is older than the limit."""
    add_agentic_workload("agentic-tiny", **TINY)
    recipe = "llama-3.1-70b-instruct/mi300x-vllm-fp8"
    _sweep(catalog_copy, "inc", recipe, "agentic-tiny",
           "    capacity: {start: 4, max_concurrency: 64, resolution: 16}\n")
    root, out, store = str(catalog_copy), tmp_path / "results", tmp_path / "history.sqlite"
    assert main(["run", "--recipe", recipe, "--workload", "agentic-tiny", "--virtual",
                 "--root", root, "--output-dir", str(out), "--run-id", "i1"]) == 0
    assert main(["collect", str(out / "i1"), "--store", str(store)]) == 0
    capsys.readouterr()

    def planned(*flags: str) -> list[str]:
        assert main(["plan", "inc", "--root", root, "--format", "json", "--incremental",
                     "--history", str(store), *flags]) == 0
        return [j["id"] for j in json.loads(capsys.readouterr().out)]

    assert planned() == []
    assert len(planned("--max-age-days", "0")) == 1  # stale at once: planned again


def test_two_fleets_searching_one_recipe_in_one_run_keep_both_results(
        catalog_copy: Path, tmp_path: Path, add_agentic_workload) -> None:  # noqa: ANN001
    """The store keys capacity results by runner too: the same recipe searched by two fleets
    in one run leaves two results per tier, not the last one collected."""
    add_agentic_workload("agentic-tiny", **TINY)
    fleets = catalog_copy / "runners" / "fleets.yaml"
    fleets.write_text(fleets.read_text() + "\nmi300x-other:\n  hardware: MI300X\n  kind: docker\n"
                      "  gpus_per_node: 8\n")
    recipe = "llama-3.1-70b-instruct/mi300x-vllm-fp8"
    _sweep(catalog_copy, "two", recipe, "agentic-tiny",
           "    capacity: {start: 4, max_concurrency: 32, resolution: 16}\n"
           "    runners: [mi300x-docker, mi300x-other]\n")
    out, store = tmp_path / "results", tmp_path / "history.sqlite"
    for runner in ("mi300x-docker", "mi300x-other"):
        assert main(["run", "--recipe", recipe, "--workload", "agentic-tiny", "--virtual",
                     "--runner-label", runner, "--root", str(catalog_copy),
                     "--output-dir", str(out), "--run-id", "same"]) == 0
    assert main(["collect", str(out / "same"), "--store", str(store)]) == 0
    from infermatrix.results.store import Store

    with Store(store) as db:
        records = agentic.load(db)
    assert len(records) == 2  # one per fleet (the second used to overwrite the first)
    assert sorted((r.runner, r.tier) for r in records) == [("mi300x-docker", "EASY"),
                                                          ("mi300x-other", "EASY")]
    assert all(r.job_id and r.fingerprint and r.finished_at for r in records)
    assert len({r.fingerprint for r in records}) == 2  # the fleet is part of what was measured


def test_a_store_from_before_the_runner_key_stays_readable(tmp_path: Path) -> None:
    """Migration v6 rebuilds the agentic table keyed with the runner; rows stored before keep
    their bodies and read back with no runner."""
    from infermatrix.results.store import MIGRATIONS, SCHEMA_VERSION, Store

    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path, isolation_level=None)
    for script in MIGRATIONS[:4]:
        for statement in script.split(";"):
            if statement.strip():
                con.execute(statement)
    con.execute("PRAGMA user_version = 4")
    old = agentic.AgenticRecord(run_id="r0", recipe="a/b", workload="w", tier="SLO20",
                                passing_concurrency=12)
    body = old.model_dump_json(exclude={"runner", "job_id", "fingerprint", "finished_at"})
    con.execute("INSERT INTO agentic VALUES (?, ?, ?, ?, ?, ?)", ("r0", "a/b", "w", "SLO20", 12, body))
    con.close()
    with Store(path) as db:
        assert db.version == SCHEMA_VERSION >= 6
        assert db.agentic() == [old]
        counts = db.save_agentic([old.model_copy(update={"runner": "fleet-b"})])
        assert (counts.added, db.count("agentic")) == (1, 2)


def test_the_real_time_simulator_binds_conc(catalog_copy: Path, tmp_path: Path) -> None:
    """A recipe with ``--max-num-seqs ${CONC}`` runs with the level's value on the simulated
    engine in real time, as on a real engine and in virtual time (it used to get the default)."""
    from infermatrix.launch.executors import Served
    from infermatrix.launch.loop import run_measurement

    cat = load_catalog(catalog_copy)
    recipe = "llama-3.1-70b-instruct/mi300x-vllm-fp8"
    assert "CONC" in cat.recipes[recipe].placeholders()
    job = make_job(cat, "adhoc", recipe, "smoke-1k-128", "mi300x-docker", [3])
    served = Served(partial(start_sim, cat, recipe, extra_args=["--time-scale", "20"]), "local")
    outcome = run_measurement(cat, job, tmp_path, "conc", served, log=lambda _m: None)
    assert outcome.status == "ok", outcome.error
    log = (outcome.job_dir / "server-sim.log").read_text()
    config = next(json.loads(line)["simulated"] for line in log.splitlines()
                  if line.startswith('{"simulated"'))
    assert config["max_num_seqs"] == 3


def test_capacity_command_is_the_planned_job(catalog_copy: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """`infermatrix capacity --recipe R --workload W --virtual` runs the job `plan` makes for
    R × W through the same loop: the same job, the same levels and tier verdicts, the context
    clamped to the recipe's max_model_len, the sessions in the job's own shape."""
    recipe = "deepseek-v4-pro/mi355x-sglang-fp4-ctx32k"  # max_model_len 32768
    workloads = catalog_copy / "matrix" / "workloads.yaml"
    workloads.write_text(workloads.read_text() + """
agentic-long:
  kind: agentic
  sessions:
    source: synthetic
    distributions: {sessions: 16, turns: 4, system_prompt_tokens: 512, user_tokens: 64, output_tokens: 32, tool_delay_s: 0.5}
    duration_s: 20
    warmup_s: 5
    max_context_tokens: 100000
  slo_tiers:
    - {name: FAST, min_output_speed: 30, max_ttft_s: 2}
""")
    _sweep(catalog_copy, "capeq", recipe, "agentic-long",
           "    capacity: {start: 4, max_concurrency: 256, resolution: 16}\n")
    root = str(catalog_copy)
    assert main(["plan", "capeq", "--root", root, "--format", "json"]) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(capsys.readouterr().out)
    (job,) = json.loads(plan.read_text())
    out = tmp_path / "results"
    assert main(["run", str(plan), "--virtual", "--root", root, "--output-dir", str(out),
                 "--run-id", "planned"]) == 0
    planned = json.loads(_only(out, "planned/jobs/*/capacity.json").read_text())
    cap = tmp_path / "cap.json"
    assert main(["capacity", "--catalog-root", root, "--recipe", recipe, "--workload",
                 "agentic-long", "--virtual", "--run-id", "by-hand", "-o", str(cap),
                 "--quiet"]) == 0
    by_hand = json.loads(cap.read_text())

    for doc in (planned, by_hand):  # the recipe's context, not the workload's 100,000 tokens
        assert doc["settings"]["max_context_tokens"] == 32768
        assert doc["sessions"] == job["measurement"]["sessions"]  # `path`, not `dataset_path`
    ident = ("kind", "job_id", "fingerprint", "runner", "recipe", "workload", "simulated",
             "launcher")
    assert [by_hand["infermatrix"][k] for k in ident] == [planned["infermatrix"][k] for k in ident]
    assert by_hand["infermatrix"]["job_id"] == job["id"]
    assert by_hand["infermatrix"]["kind"] == "capacity-result"  # as levels and evals are marked

    def searched(doc: dict) -> list:
        return [(lv["concurrency"], lv["completed"], lv["p25_output_speed"], lv["p95_ttft_ms"],
                 lv["tiers"]) for lv in doc["levels"]]

    def verdicts(doc: dict) -> list:
        return [(t["tier"], t["passing_concurrency"], t["first_failing"], t["bounded"])
                for t in doc["tiers"]]

    assert len(searched(planned)) >= 2 and searched(by_hand) == searched(planned)
    assert verdicts(by_hand) == verdicts(planned)
    assert by_hand["settings"] == planned["settings"]


def test_virtual_jobs_record_their_evals_as_skipped(catalog_copy: Path, tmp_path: Path) -> None:
    """A virtual job has no server for lm-eval: its planned evals are listed in the manifest as
    skipped, with the reason, never dropped without a word."""
    recipe = "deepseek-r1-0528/h200-sglang-fp8"
    _sweep(catalog_copy, "ev", recipe, "smoke-1k-128",
           "    concurrency: [1, 2]\n    eval: {at: [max], tasks: [{task: gsm8k}]}\n")
    out = tmp_path / "results"
    assert main(["run", "--recipe", recipe, "--workload", "smoke-1k-128", "--virtual",
                 "--root", str(catalog_copy), "--output-dir", str(out), "--run-id", "v1"]) == 0
    manifest = json.loads(_only(out, "v1/jobs/*/manifest.json").read_text())
    assert [e["after"] for e in manifest["job"]["evals"]] == [2]
    (entry,) = manifest["evals"]
    assert (entry["task"], entry["concurrency"], entry["status"]) == ("gsm8k", 2, "skipped")
    assert "virtual time" in entry["reason"]
    assert manifest["status"] == "ok"  # a step not run is recorded, not a failure


def test_a_capacity_job_of_a_conc_recipe_launches_on_a_real_backend(
        fake_cluster, monkeypatch, add_agentic_workload) -> None:  # noqa: ANN001
    """A capacity search launches its server once: ``${CONC}`` binds to the search's bound, so
    a recipe with ``--max-num-seqs ${CONC}`` starts (it used to fail with the placeholder
    unbound) and no searched level is capped below its agents."""
    recipe = "llama-3.1-70b-instruct/mi300x-vllm-fp8"  # --max-num-seqs ${CONC}, a docker fleet
    add_agentic_workload("agentic-tiny", **{**TINY, "duration_s": 1, "warmup_s": 0.2})
    _sweep(fake_cluster.root, "concap", recipe, "agentic-tiny",
           "    capacity: {start: 1, max_concurrency: 2}\n")
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", recipe)
    assert main(["run", "--recipe", recipe, "--workload", "agentic-tiny", "--root",
                 str(fake_cluster.root), "--output-dir", str(fake_cluster.out), "--run-id", "cc",
                 "--ready-timeout", "120"]) == 0
    _, manifest = fake_cluster.manifest("cc")
    assert manifest["status"] == "ok" and manifest["launcher"] == "docker", manifest["error"]
    (run,) = [c for c in fake_cluster.calls("docker") if c[0] == "run"]
    assert run[run.index("--max-num-seqs") + 1] == "2"  # the search's max_concurrency
    assert [lv["concurrency"] for lv in manifest["levels"]] == [1, 2]
