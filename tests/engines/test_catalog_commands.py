"""docs/catalog.md holds every command of the seed documents, token for token, under the recipe
it belongs to: the 15 serving commands (golden/*.yaml, with the values both sides bind) and the
3 benchmark client commands (golden_bench/*.yaml) — 18 in all. Where the seeds themselves are
present, their benchmark commands must be the golden ones."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from imx_seedtext import drop_flags, joined_lines, normalise, substitute, tokens

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "catalog.md"
GOLDEN = Path(__file__).parent / "golden"
GOLDEN_BENCH = Path(__file__).parent / "golden_bench"
SEEDS = next((p for p in (REPO.parent / "shared" / "seeds", Path("/work/shared/seeds"))
              if p.is_dir()), None)  # fmt: skip
BENCH_STARTS = ("python -m sglang.bench_serving", "python3 bench_serving/benchmark_serving.py")


def doc_commands() -> dict[str, list[str]]:
    """Recipe id -> the logical lines (continuations joined) of its bash blocks."""
    out: dict[str, list[str]] = {}
    rid, block, lines = None, False, []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^### `(.+)`$", line)
        if m:
            rid = m.group(1)
            out[rid] = []
        elif line.startswith("```bash"):
            block, lines = True, []
        elif line.startswith("```") and block:
            block = False
            out[rid or ""] += [normalise(x) for x in joined_lines("\n".join(lines)) if x.strip()]
        elif block:
            lines.append(line)
    return out


DOCS = doc_commands()


def contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def found(rid: str, want: list[str], bind: dict[str, str], ignore: list[str]) -> bool:
    ours = {f"${{{k}}}": v for k, v in bind.items()}
    for line in DOCS.get(rid, []):
        try:
            got = shlex.split(substitute(line, ours))
        except ValueError:
            continue
        if contains(drop_flags(got, ignore), want):
            return True
    return False


def cases(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.yaml"))


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", cases(GOLDEN), ids=[p.stem for p in cases(GOLDEN)])
def test_serving_commands_are_in_the_catalog_page(path: Path) -> None:
    case = load(path)
    for name, proc in case["processes"].items():
        want = tokens(proc["command"], {**case.get("seed_values", {}), **proc.get("values", {})})
        assert found(case["recipe"], want, case.get("bind", {}), proc.get("ignore_flags", [])), (
            f"{case['recipe']} / {name}: the seed's command is not in docs/catalog.md")


@pytest.mark.parametrize("path", cases(GOLDEN_BENCH), ids=[p.stem for p in cases(GOLDEN_BENCH)])
def test_benchmark_commands_are_in_the_catalog_page(path: Path) -> None:
    case = load(path)
    recipes = case.get("recipes") or [case["recipe"]]
    for command in case["commands"]:
        want = tokens(command, {})
        missing = [rid for rid in recipes if not found(rid, want, {}, [])]
        assert not missing, f"{want[:4]}… is not in docs/catalog.md for {missing}"


def test_eighteen_seed_commands() -> None:
    serving = {normalise(" ".join(joined_lines(p["command"]))) for path in cases(GOLDEN)
               for p in load(path)["processes"].values()}  # fmt: skip
    bench = [normalise(" ".join(joined_lines(c))) for path in cases(GOLDEN_BENCH)
             for c in load(path)["commands"]]  # fmt: skip
    assert len(serving) + len(bench) == 18


@pytest.mark.skipif(SEEDS is None, reason="seed documents (../shared/seeds) not present")
def test_golden_benchmark_commands_are_the_seeds() -> None:
    assert SEEDS is not None
    published = {normalise(line) for f in SEEDS.iterdir()
                 for line in joined_lines(f.read_text(encoding="utf-8"))
                 if line.lstrip().startswith(BENCH_STARTS)}  # fmt: skip
    golden = {normalise(" ".join(joined_lines(c))) for path in cases(GOLDEN_BENCH)
              for c in load(path)["commands"]}  # fmt: skip
    assert published == golden
