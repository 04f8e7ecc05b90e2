"""`report` and `compare` render any string from a result file as text: matplotlib math text
(`$...$`) in a model, hardware or workload name neither breaks the plots nor is parsed; markup
in result fields stays text in the markdown; the dashboard's recipe links are http(s) or
relative only."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "results"))

from imx_results_data import RUN, level  # noqa: E402

from infermatrix.cli import main  # noqa: E402

# a malformed math text (matplotlib raises on it) and markup, in every name a plot shows
HOSTILE = {"model": r"m$\frac{1}{$", "hardware": "H200 $x^$", "workload": "w <b>x</b> $$",
           "recipe": "r/<img src=x onerror=alert(1)>|x", "engine": "sglang $\\sqrt{}$"}


def _run_folder(root: Path) -> Path:
    job = root / RUN / "jobs" / "job-1"
    job.mkdir(parents=True)
    for c in (1, 4, 16):
        (job / f"conc-{c}.json").write_text(json.dumps(level(c, dict(HOSTILE))))
    return root / RUN


def test_report_draws_math_text_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_folder(tmp_path / "runs")
    out = tmp_path / "report"
    rc = main(["report", str(run), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err, err
    assert list(out.rglob("*.png")) and list(out.rglob("*.svg"))
    svg = next(p for p in out.rglob("*.svg") if "dark" not in p.name).read_text()
    # labels are drawn as text: the dollar signs are there (math text would have eaten them)
    assert "$x^$" in svg or "x^" in svg
    summary = (out / "summary.md").read_text()
    assert not re.search(r"(?<!\\)<img", summary) and not re.search(r"(?<!\\)\$x\^\$", summary)


def test_report_refuses_a_javascript_catalog_link(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_folder(tmp_path / "runs")
    for url in ("javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,x", "//evil.example/x",
                "file:///etc/passwd"):
        rc = main(["report", str(run), "-o", str(tmp_path / "out"), "--no-plots", "--catalog", url])
        err = capsys.readouterr().err
        assert rc == 2 and len(err.strip().splitlines()) == 1 and "--catalog" in err, (url, err)
    for url in ("https://example.org/catalog.html", "catalog.html", "../docs/catalog.md#{anchor}"):
        rc = main(["report", str(run), "-o", str(tmp_path / "ok"), "--no-plots", "--catalog", url])
        assert rc == 0, capsys.readouterr().err


def test_compare_markdown_escapes_result_fields(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_folder(tmp_path / "runs")
    rc = main(["compare", str(run), str(run)])
    out = capsys.readouterr().out
    assert rc == 0, out
    header, *table = [ln for ln in out.splitlines() if ln.startswith("| ")]
    assert table, out
    cells = header.count("|")
    for line in table:  # markup stays text; no field adds a table cell
        assert not re.search(r"(?<!\\)<img", line) and line.count("|") - line.count("\\|") == cells, line
