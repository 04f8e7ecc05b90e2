"""YAML loading that remembers where every value came from.

PyYAML's safe loader drops line numbers, so we compose the node tree ourselves and build plain
Python objects next to a map from each value's path (a tuple of keys and indices) to its line.
Error messages can then name ``file:line: field.path`` for any problem pydantic reports.

Untrusted files are bounded before anything walks them: a size limit on the text, a depth and
node-count limit while composing, and aliases kept as shared references (never re-expanded)
with their expanded size and depth checked, so an alias bomb, a recursive alias or deep
nesting is one ``file:line`` problem, not a hang, a RecursionError or a MemoryError.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from ..jsonio import read_bounded
from .safety import CONTROL

Loc = tuple[str | int, ...]

MAX_BYTES = 1 << 20  # the largest catalog file is a few kB
MAX_DEPTH = 64  # nesting levels, counted through aliases
MAX_NODES = 100_000  # values in the document as a tree (each alias counts its whole subtree)
# libyaml's event parser, when PyYAML has it: a fast first pass over the limits
_FAST_PARSER = getattr(yaml, "CSafeLoader", None)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input file, printable as a single line."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        text = f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        # one line, whatever a key or a file name holds: control characters are escaped
        return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class CatalogError(Exception):
    """Raised with every problem found; the CLI prints one line per problem and exits 2."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    def report(self, file: TextIO) -> None:
        """One ``file:line: field: message`` line per problem (the CLIs print them to stderr)."""
        for problem in self.problems:
            print(problem, file=file)


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


class _LimitExceeded(Exception):
    def __init__(self, line: int, message: str):
        self.line, self.message = line, message


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader's composer with a nesting and a node-count limit (checked before
    recursing, so composing never meets Python's recursion limit)."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        mark = self.peek_event().start_mark
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _LimitExceeded(mark.line + 1, f"more than {MAX_NODES} values")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _LimitExceeded(mark.line + 1, f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _prescan(text: str) -> None:
    """Count values and nesting from libyaml's events before the (pure-Python, slower)
    composer sees the text: a file over a limit fails in milliseconds."""
    if _FAST_PARSER is None:
        return
    depth = nodes = 0
    try:
        for event in yaml.parse(text, Loader=_FAST_PARSER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _LimitExceeded(event.start_mark.line + 1,
                                         f"nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            if isinstance(event, yaml.NodeEvent):
                nodes += 1
                if nodes > MAX_NODES:
                    raise _LimitExceeded(event.start_mark.line + 1, f"more than {MAX_NODES} values")
    except yaml.YAMLError:
        return  # the composer reports it, with its own wording


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_expansion(root: yaml.Node) -> None:
    """Size and depth of the tree the node graph stands for, without expanding it: each node is
    measured once (iteratively), so a shared alias costs nothing and a cycle is found."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            on_path.discard(key)
            line = node.start_mark.line + 1
            if size[key] > MAX_NODES:
                raise _LimitExceeded(line, f"aliases expand to more than {MAX_NODES} values")
            if depth[key] > MAX_DEPTH:
                raise _LimitExceeded(line, f"aliases nest deeper than {MAX_DEPTH} levels")
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for kid in _children(node):
            if id(kid) in on_path:
                raise _LimitExceeded(kid.start_mark.line + 1, "recursive alias (a value "
                                     "that contains itself)")
            if id(kid) not in size:
                stack.append((kid, False))


def _compose(text: str) -> yaml.Node | None:
    """The document's node graph, every limit checked."""
    _prescan(text)
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    if node is not None:
        check_expansion(node)
    return node


class _Builder:
    """Plain Python values from a checked node graph; a node met again through an alias is the
    same object (built once), and its lines are those of its first occurrence."""

    def __init__(self, doc: SourceDoc, problems: list[Problem]):
        self.doc, self.problems = doc, problems
        self.built: dict[int, Any] = {}
        self.constructor = yaml.SafeLoader("")

    def scalar(self, node: yaml.ScalarNode) -> Any:
        return self.constructor.construct_object(node, deep=True)

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        doc, problems = self.doc, self.problems
        doc.lines.setdefault(loc, node.start_mark.line + 1)
        if id(node) in self.built:
            return self.built[id(node)]
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            self.built[id(node)] = out
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    problems.append(doc.problem(loc, "YAML merge keys (<<) are not supported"))
                    continue
                key = self.scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
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
                out[key] = self.build(value_node, child)
            return out
        if isinstance(node, yaml.SequenceNode):
            items: list[Any] = []
            self.built[id(node)] = items
            items.extend(self.build(item, (*loc, i)) for i, item in enumerate(node.value))
            return items
        value = self.scalar(node)
        self.built[id(node)] = value
        return value


def load_yaml(path: Path | str, display: str | None = None) -> SourceDoc:
    """Parse one YAML file; raise CatalogError (never a traceback) when it is not valid YAML."""
    shown = display or str(path)
    try:
        text = read_bounded(path, MAX_BYTES).decode("utf-8")  # never a FIFO, never unbounded
    except (OSError, UnicodeDecodeError) as exc:
        if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
            raise CatalogError([Problem(shown, 1, "", f"file is larger than {MAX_BYTES >> 20} MiB")]) from None
        reason = ("not a file" if isinstance(exc, OSError) and Path(path).is_dir()
                  else exc.strerror if isinstance(exc, OSError) and exc.strerror else exc)
        raise CatalogError([Problem(shown, 0, "", f"cannot read file: {reason}")]) from None
    return parse_yaml(text, shown)


def parse_yaml(text: str, shown: str) -> SourceDoc:
    doc = SourceDoc(shown, None)
    if len(text) > MAX_BYTES:
        raise CatalogError([Problem(shown, 1, "", f"text is larger than {MAX_BYTES >> 20} MiB")])
    try:
        node = _compose(text)
    except _LimitExceeded as exc:
        raise CatalogError([Problem(shown, exc.line, "", exc.message)]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, ...)
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        raise CatalogError([Problem(shown, line, "", f"invalid YAML: character "
                                    f"{exc.character:#06x} is not allowed")]) from None
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
        doc.data = _Builder(doc, problems).build(node, ())
    except yaml.YAMLError as exc:  # e.g. a bad !!tag on a scalar
        mark = getattr(exc, "problem_mark", None)
        raise CatalogError([Problem(shown, mark.line + 1 if mark else 0, "",
                                    f"invalid YAML: {getattr(exc, 'problem', None) or exc}")]) from None
    except (ValueError, OverflowError) as exc:  # e.g. a timestamp out of range
        raise CatalogError([Problem(shown, 0, "", f"invalid YAML value: {exc}")]) from None
    if problems:
        raise CatalogError(problems)
    return doc
