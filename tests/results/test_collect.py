"""Collect over a messy run folder: every file in exactly one bucket, valid records kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from imx_results_data import BLOCK, DISAGG_BLOCK, MESSY_COUNTS, RUN, level, messy_run
from imx_support.synthetic import SynthJob, level_result, write_job

from infermatrix.results import collect
from infermatrix.results.collect import read_json, walk


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infermatrix.cli", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd)


def test_buckets_of_a_messy_run(tmp_path: Path) -> None:
    run = messy_run(tmp_path)
    result = collect([run])
    s = result.summary
    assert s.counts() == MESSY_COUNTS
    assert s.files == sum(MESSY_COUNTS.values()) - MESSY_COUNTS["missing"]  # missing: not a file
    assert (s.failed_levels, s.skipped) == (1, 8)
    assert [(r.job_id, r.concurrency) for r in result.records] == [
        (DISAGG_BLOCK["job_id"], 8), (DISAGG_BLOCK["job_id"], 32), (DISAGG_BLOCK["job_id"], 64),
        (BLOCK["job_id"], 1), (BLOCK["job_id"], 4), (BLOCK["job_id"], 16)]
    assert set(result.raw) == {r.key for r in result.records}
    # the first copy in name order wins; its raw bytes are the file's
    kept = next(r for r in result.records if r.concurrency == 4)
    assert kept.source == str(run / "jobs" / BLOCK["job_id"] / "conc-4.json")
    assert result.raw[kept.key] == Path(kept.source).read_bytes()
    reasons = {Path(p).name: why for p, why in s.problems}
    assert reasons["conc-99.json"].startswith("corrupt: not UTF-8")
    assert reasons["notes.json"].startswith("corrupt: broken JSON")
    assert reasons["conc-256.json"].startswith("truncated")
    assert reasons["empty.json"] == "truncated: empty file"
    assert reasons["conc-4.json"].startswith("duplicate: same run/job/concurrency as")
    assert reasons["conc-0.json"].startswith("invalid: infermatrix.concurrency")
    assert reasons["conc-128.json"].startswith("missing: listed in")
    assert reasons["bench-vllm.json"].startswith("foreign")
    assert reasons["config.json"].startswith("foreign")
    assert len(s.problems) == s.skipped + s.missing
    line = s.line()
    assert line.startswith("6 records (1 failed levels) from 20 files: 3 manifests, 2 corrupt, "
                           "2 truncated")
    assert "1 duplicate, 2 foreign, 1 invalid, 3 other; 1 missing" in line


@pytest.mark.parametrize(("text", "bucket"), [
    (b"", "truncated"), (b"  \n", "truncated"), (b'{"a": ', "truncated"),
    (b'{"a": "ab', "truncated"),
    (b'{"a": tr', "truncated"), (b'{"a": 1.', "truncated"), (b'[1, 2', "truncated"),
    ('{"é": "'.encode()[:-3], "truncated"),  # cut inside a two-byte character
    (b'{"a": 1}}', "corrupt"), (b'{"a": x}', "corrupt"), (b"\xff\xfe", "corrupt"),
    (b'{"a": [1, 2]}', "json"),
])
def test_truncated_or_corrupt(text: bytes, bucket: str) -> None:
    assert read_json(text)[0] == bucket


def test_each_file_once_through_overlapping_paths(tmp_path: Path) -> None:
    run = messy_run(tmp_path)
    job = run / "jobs" / BLOCK["job_id"]
    files = walk([run, job, job / "conc-1.json", tmp_path])
    assert len(files) == len(set(files)) == 20
    result = collect([job, run, job / "conc-1.json"])
    assert result.summary.counts() == MESSY_COUNTS


def test_synthetic_jobs_collect_cleanly(tmp_path: Path) -> None:
    job = SynthJob(prefill_tp=4, power_w_per_gpu=700.0)
    written = write_job(tmp_path / "run-x", job, failed_levels=(4,))
    assert [p.name for p in written] == ["conc-1.json", "conc-2.json", "conc-4.json"]
    result = collect([tmp_path])
    expected = {**dict.fromkeys(MESSY_COUNTS, 0), "records": 3, "manifests": 1}
    assert result.summary.counts() == expected
    rec = result.records[-1]
    assert (rec.status, rec.mode, rec.gpus_total, rec.topology) == ("failed", "disaggregated", 12,
                                                                    "P 1×tp4 + D 1×tp8")
    assert rec.j_per_output_token is not None
    assert json.loads(written[0].read_text()) == level_result(job, "run-x", 1)


# ---------------------------------------------------------------- the CLI


def test_cli_warns_and_exits_zero_or_one_with_strict(tmp_path: Path) -> None:
    run = messy_run(tmp_path)
    store, jsonl, csv = tmp_path / "h.sqlite", tmp_path / "r.jsonl", tmp_path / "r.csv"
    res = cli("collect", str(run), "--store", str(store), "--jsonl", str(jsonl), "--csv", str(csv))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "collect: 6 records (1 failed levels) from 20 files: 3 manifests, 2 corrupt, 2 truncated, "
        "1 duplicate, 2 foreign, 1 invalid, 3 other; 1 missing; store: 6 added, 0 updated, "
        "0 unchanged"]
    err = res.stderr.splitlines()
    assert err[0] == "warning: 9 files skipped or missing:" and len(err) == 10
    assert all(line.startswith(f"  {tmp_path}") for line in err[1:])
    assert len(jsonl.read_text().splitlines()) == 6 and len(csv.read_text().splitlines()) == 7
    strict = cli("collect", str(run), "--store", str(store), "--strict", "-q")
    assert strict.returncode == 1 and strict.stdout == ""
    clean = tmp_path / "clean"
    write_job(clean / RUN, SynthJob())
    assert cli("collect", str(clean), "--strict").returncode == 0


def test_cli_at_most_twenty_reasons(tmp_path: Path) -> None:
    for i in range(25):
        (tmp_path / f"broken-{i:02}.json").write_text("{")
    res = cli("collect", str(tmp_path))
    err = res.stderr.splitlines()
    assert res.returncode == 0 and err[0] == "warning: 25 files skipped or missing:"
    assert len(err) == 22 and err[-1] == "  … and 5 more"


@pytest.mark.parametrize("case", ["no-such-dir", "store-not-sqlite", "store-is-dir", "no-args",
                                  "bad-flag"])
def test_cli_mistakes_are_one_line_exit_two(tmp_path: Path, case: str) -> None:
    run = messy_run(tmp_path)
    (tmp_path / "notes.txt").write_text("not a database")
    args = {"no-such-dir": [str(tmp_path / "nope")],
            "store-not-sqlite": [str(run), "--store", str(tmp_path / "notes.txt")],
            "store-is-dir": [str(run), "--store", str(tmp_path)],
            "no-args": [], "bad-flag": [str(run), "--bogus"]}[case]
    res = cli("collect", *args)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("infermatrix collect: ") and "Traceback" not in res.stderr
    if case == "no-such-dir":
        assert "nope: no such file or directory" in res.stderr


def test_collect_main_returns_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from infermatrix.commands.results import collect_main

    assert collect_main([str(tmp_path / "missing")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    (tmp_path / "ok.json").write_text(json.dumps(level(2)))
    assert collect_main([str(tmp_path), "-q"]) == 0
