"""Property: one bad result file costs that file, never the run. Whatever a level file holds
(numbers beyond float range, NaN, booleans, structures in place of figures, cut-off or
garbled bytes), `collect`, `report` and `compare` finish without a traceback, keep the run's
good levels, and name the bad file in a problem line when they skip it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bounded import call, value_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from imx_support.synthetic import SynthJob, write_job

from infermatrix.results.collect import collect

RUN = "20261123T000000Z-fuzz01"
TOKENS = ["1e999", "-1e999", "1" + "0" * 400, "-" + "9" * 30, "1" + "0" * 5000, "NaN",
          "Infinity", "-Infinity", "true", "false", "null", "[]", "{}", '"x"', '""', "0", "-1",
          "1e-320", "5e-324", "9223372036854775808", "9223372036854775807", "1.7976931348623157e308",
          '{"a": [1, 2]}', '"\\u0000"', '"\\ud800"', '"' + "x" * 10_000 + '"']
SPLICES = [b"", b"\xff", b"\x00", b"}", b"{", b"]", b",", b'"', b"\\", b"NaN", b"1e999", b"\xe2\x82"]


def _put(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


@st.composite
def mutated_level(draw: st.DrawFn) -> bytes:
    """conc-2.json of the synthetic job, mutated."""
    from imx_support.synthetic import level_result

    doc = level_result(SynthJob(concurrency=(1, 2, 4)), RUN, 2)
    if draw(st.booleans()):
        paths = value_paths(doc)
        tokens = {}
        for i in range(draw(st.integers(1, 3))):
            try:
                _put(doc, draw(st.sampled_from(paths)), f"__FUZZ{i}__")
            except (KeyError, IndexError, TypeError):  # the root, or inside a value replaced
                continue
            tokens[f'"__FUZZ{i}__"'] = draw(st.sampled_from(TOKENS))
        text = json.dumps(doc)
        for mark, token in tokens.items():
            text = text.replace(mark, token)
        return text.encode("utf-8", "surrogatepass")
    data = json.dumps(doc).encode()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(SPLICES)) + data[at + draw(st.integers(0, 4)):]
    return data


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=mutated_level())
def test_one_bad_level_file(tmp_path_factory: Any, raw: bytes) -> None:
    base = tmp_path_factory.mktemp("res")
    run = base / RUN
    files = write_job(run, SynthJob(concurrency=(1, 2, 4)))
    bad = files[1]
    bad.write_bytes(raw)

    result = collect([run])
    levels = {r.concurrency for r in result.records}
    assert {1, 4} <= levels  # the good levels survive
    if 2 not in levels:
        assert any(path == str(bad) for path, _ in result.summary.problems)

    for argv in (["collect", str(run)],
                 ["report", str(run), "-o", str(base / "site"), "--no-plots"],
                 ["compare", str(run), str(run)]):
        rc, _, err = call(argv, seconds=120)
        assert "Traceback" not in err
        assert rc in (0, 1), (argv[0], err)


def test_plots_with_extreme_numbers(tmp_path: Path) -> None:
    """The figures themselves: a level whose figures are at the edge of float range is drawn
    or left out, never a crash of the report."""
    run = tmp_path / RUN
    files = write_job(run, SynthJob(concurrency=(1, 2, 4)))
    doc = json.loads(files[1].read_text())
    doc.update(output_throughput=1.7976931348623157e308, median_tpot_ms=5e-324,
               total_output_tokens=9223372036854775807, duration=5e-324)
    files[1].write_text(json.dumps(doc))
    rc, _, err = call(["report", str(run), "-o", str(tmp_path / "site")], seconds=300)
    assert rc == 0 and "Traceback" not in err, err


def test_records_jsonl_numbers_out_of_range(tmp_path: Path) -> None:
    """A records file given to report/compare: a float beyond range is unknown (null); an
    integer beyond 64 bits is that file's one `file:line` error, exit 2."""
    run = tmp_path / RUN
    write_job(run, SynthJob(concurrency=(1, 2)))
    jsonl = tmp_path / "records.jsonl"
    assert call(["collect", str(run), "--jsonl", str(jsonl)])[0] == 0
    first, second = jsonl.read_text().splitlines()
    huge = json.loads(first)
    huge["output_throughput"] = "__X__"
    jsonl.write_text(json.dumps(huge).replace('"__X__"', "1e999") + "\n" + second + "\n")
    for argv in (["report", str(jsonl), "-o", str(tmp_path / "site"), "--no-plots"],
                 ["compare", str(jsonl), str(jsonl)]):
        rc, _, err = call(argv)
        assert rc == 0 and "Traceback" not in err, err
    jsonl.write_text(first + "\n" + second.replace('"gpus_total":', '"gpus_total":1' + "0" * 400
                                                   + ',"x":', 1) + "\n")
    for argv in (["report", str(jsonl), "-o", str(tmp_path / "site"), "--no-plots"],
                 ["compare", str(jsonl), str(jsonl)]):
        rc, _, err = call(argv)
        assert rc == 2, err
        (line,) = err.strip().splitlines()
        assert f"{jsonl}:2: " in line and "out of range" in line, line
