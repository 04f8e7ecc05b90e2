"""YAML loading that remembers where every value came from.

PyYAML's safe loader drops line numbers, so we compose the node tree ourselves and build plain
Python objects next to a map from each value's path (a tuple of keys and indices) to its line.
Error messages can then name ``file:line: field.path`` for any problem pydantic reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input file, printable as a single line."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class CatalogError(Exception):
    """Raised with every problem found; the CLI prints one line per problem and exits 2."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass
class SourceDoc:
    """A parsed YAML document plus the line of every value in it."""

    path: str
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int:
        """Line of the deepest known prefix of ``loc`` (a missing field points at its parent)."""
        for cut in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:cut]))
            if line:
                return line
        return 1

    def problem(self, loc: Loc, message: str) -> Problem:
        return Problem(self.path, self.line_of(loc), format_loc(loc), message)


def format_loc(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _scalar(node: yaml.ScalarNode) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _build(node: yaml.Node, loc: Loc, doc: SourceDoc, problems: list[Problem]) -> Any:
    doc.lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                problems.append(doc.problem(loc, "YAML merge keys (<<) are not supported"))
                continue
            key = _scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str | int | float | bool):
                problems.append(
                    Problem(doc.path, key_node.start_mark.line + 1, format_loc(loc),
                            "mapping keys must be plain scalars")
                )
                continue
            key = str(key)
            child = (*loc, key)
            if key in out:
                problems.append(
                    Problem(doc.path, key_node.start_mark.line + 1, format_loc(child),
                            "duplicate key")
                )
                continue
            doc.lines[child] = key_node.start_mark.line + 1
            out[key] = _build(value_node, child, doc, problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*loc, i), doc, problems) for i, item in enumerate(node.value)]
    return _scalar(node)


def load_yaml(path: Path | str, display: str | None = None) -> SourceDoc:
    """Parse one YAML file; raise CatalogError (never a traceback) when it is not valid YAML."""
    shown = display or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError([Problem(shown, 0, "", f"cannot read file: {exc}")]) from None
    return parse_yaml(text, shown)


def parse_yaml(text: str, shown: str) -> SourceDoc:
    doc = SourceDoc(shown, None)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        reason = exc.problem or exc.context or "invalid YAML"
        raise CatalogError([Problem(shown, line, "", f"invalid YAML: {reason}")]) from None
    except yaml.YAMLError as exc:
        raise CatalogError([Problem(shown, 0, "", f"invalid YAML: {exc}")]) from None
    if node is None:
        raise CatalogError([Problem(shown, 1, "", "file is empty")])
    problems: list[Problem] = []
    try:
        doc.data = _build(node, (), doc, problems)
    except yaml.YAMLError as exc:  # e.g. a bad !!tag on a scalar
        raise CatalogError([Problem(shown, 0, "", f"invalid YAML: {exc}")]) from None
    if problems:
        raise CatalogError(problems)
    return doc
