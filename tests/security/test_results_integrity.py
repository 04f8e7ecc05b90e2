"""Measured results are never lost or trusted blindly: `collect` refuses to write an export
inside the runs it reads (it would overwrite a level file), and `sweep --resume` checks every
finished level file against the SHA-256 its manifest recorded, measuring again exactly the
levels whose file no longer matches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infermatrix.cli import main


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke sweep in virtual time, once for the module."""
    out = tmp_path_factory.mktemp("sweep")
    assert main(["sweep", "smoke", "--virtual", "--output-dir", str(out), "--run-id", "s1",
                 "--workers", "1"]) == 0
    return out


def _levels(run: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(run.glob("jobs/*/conc-*.json"))}


def test_collect_refuses_an_output_inside_its_inputs(swept: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run = swept / "s1"
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    level = next(p for p in before if p.name.startswith("conc-"))
    for flag, target in (("--jsonl", level), ("--csv", level), ("--jsonl", run / "new.jsonl"),
                         ("--jsonl", run)):
        rc = main(["collect", str(run), flag, str(target), "-q"])
        err = capsys.readouterr().err
        assert rc == 2 and flag in err and "inside the input" in err and len(err.splitlines()) == 1, err
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    assert main(["collect", str(run), "--jsonl", str(tmp_path / "records.jsonl"), "-q"]) == 0


def test_resume_measures_again_a_level_whose_file_changed(swept: Path, tmp_path: Path) -> None:
    run = tmp_path / "s1"
    shutil.copytree(swept / "s1", run)
    before = _levels(run)
    damaged, edited = list(before)[:2]
    damaged.write_bytes(before[damaged][: len(before[damaged]) // 2])  # truncated
    doc = json.loads(before[edited])
    doc["output_throughput"] = doc["output_throughput"] * 10  # still valid, but not what was measured
    edited.write_text(json.dumps(doc, indent=2) + "\n")
    manifests = {p: json.loads(p.read_text()) for p in run.glob("jobs/*/manifest.json")}
    assert all(lv.get("sha256") for m in manifests.values() for lv in m["levels"])
    assert main(["sweep", "smoke", "--virtual", "--output-dir", str(tmp_path), "--resume", "s1",
                 "--workers", "1"]) == 0
    after = _levels(run)
    assert set(after) == set(before)
    for path, data in after.items():
        level = json.loads(data)  # every level file whole and valid again
        assert level["infermatrix"]["status"] == "ok"
        if path == edited:
            assert level["output_throughput"] != doc["output_throughput"]
        if path not in (damaged, edited):  # kept byte for byte, never measured again
            assert data == before[path], path
    for path in (damaged, edited):  # measured again, in a second attempt of its job
        manifest = json.loads((path.parent / "manifest.json").read_text())
        assert manifest["attempt"] == 2 and manifest["state"] == "done"
