"""Property: whatever a catalog file holds, `infermatrix validate` answers within its time
limit with exit 0 or 2 and, on 2, only `file:line: message` lines; never a traceback.

Each example takes one file of a small catalog and either swaps one value for a hostile one
(huge, non-finite, boolean, text with control characters, a structure) or splices YAML syntax
(anchors, aliases, tags, merge keys, brackets, NULs) into its text."""

from __future__ import annotations

import math
import resource
from pathlib import Path
from typing import Any

import yaml
from bounded import MINI_FILES, assert_problem_lines, call, mini_catalog, value_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SCALARS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([10**400, -(10**400), True, False, None, math.inf, -math.inf, math.nan,
                     1e308, 5e-324, 0, -1, "", "-oProxyCommand=x", "../../x", "${PORT}"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=24),  # any code point: newlines, NUL, escapes, RTL marks
)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3),
                   st.dictionaries(st.text(max_size=6), SCALARS, max_size=3))
SNIPPETS = ["&a ", "*a", "*b", "[", "]", "{", "}", ": ", "- ", "\t", "\x00", "'", '"', "#",
            "!!python/object/apply:os.system ['touch PWNED']", "!!binary ", "!!float ",
            "<<: *a\n", "%YAML 1.1\n", "---\n", "...\n", "? ", "|\n", ">-\n", "&a [*a]",
            "\n  ", "\ufeff", "\udcff", "9" * 400, ".inf", ".nan", "0x", "1_000", "2001-13-45"]


def _replace(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, dict):
        return {**data, head: _replace(data[head], rest, value)}
    return [_replace(v, rest, value) if i == head else v for i, v in enumerate(data)]


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True)


@st.composite
def mutated_file(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(MINI_FILES))
    text = (Path(__file__).resolve().parents[2] / name).read_text(encoding="utf-8")
    if draw(st.booleans()):
        data = yaml.safe_load(text)
        path = draw(st.sampled_from(value_paths(data)))
        return name, _dump(_replace(data, path, draw(VALUES)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 3))
        text = text[:at] + draw(st.sampled_from(SNIPPETS)) + text[at + cut:]
    return name, text


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=mutated_file())
def test_validate_never_crashes(tmp_path_factory: Any, case: tuple[str, str]) -> None:
    name, text = case
    root = mini_catalog(tmp_path_factory.mktemp("cat"))
    (root / name).write_text(text, encoding="utf-8", errors="surrogatepass")
    rc, _, err = call(["validate", "--root", str(root)], seconds=60)
    assert rc in (0, 2), err
    if rc == 2:
        assert_problem_lines(err)
    assert not (root / "PWNED").exists() and not Path("PWNED").exists()
    # memory stays bounded: the peak of the whole test process, in kB on Linux
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2 << 20
