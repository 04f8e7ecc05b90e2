"""The same artifacts collected again from another folder (a downloaded copy) are unchanged in
the store, not updated; a level whose numbers differ is updated."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from imx_support.synthetic import SynthJob, write_job

from infermatrix.results.collect import collect

RUN = "20261123T000000Z-copy01"


def test_a_copy_elsewhere_is_unchanged(tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite"
    run = tmp_path / "a" / RUN
    files = write_job(run, SynthJob(concurrency=(1, 2)))
    assert collect([run], store=store).summary.stored.added == 2
    copy = tmp_path / "b" / RUN
    shutil.copytree(run, copy)
    counts = collect([copy], store=store).summary.stored
    assert (counts.added, counts.updated, counts.unchanged) == (0, 0, 2)
    # a real change in one level is an update of that level only
    level = copy / files[1].relative_to(run)
    doc = json.loads(level.read_text())
    doc["output_throughput"] *= 2
    level.write_text(json.dumps(doc))
    counts = collect([copy], store=store).summary.stored
    assert (counts.added, counts.updated, counts.unchanged) == (0, 1, 1)
