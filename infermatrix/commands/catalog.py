"""`infermatrix catalog`: render docs/catalog.md (and its JSON form) from the recipes, and
docs/fields.md (the catalog files' field reference) from the schema.

    infermatrix catalog                 # write docs/catalog.md and docs/fields.md
    infermatrix catalog --json out.json # also write the JSON the dashboard reads
    infermatrix catalog --check         # exit 1 when one is stale, or a field has no text (CI)
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

from ..catalog import reference
from ..catalog.loader import default_root, load_catalog
from ..catalog.yamlsrc import CatalogError
from ..engines.flags import RenderError
from ..jsonio import write_json_atomic, write_text_atomic
from ..launch.bench_commands import recipe_benchmarks
from ..report.catalog_page import build

DEFAULT_OUTPUT = Path("docs/catalog.md")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help=f"markdown page to write (default: {DEFAULT_OUTPUT} under the catalog root)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the catalog as JSON (for the dashboard)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the output files are not up to date")
    parser.add_argument("--root", type=Path, default=None, help="catalog root (default: this checkout)")


def _json_text(data: object) -> str:
    return json.dumps(data, indent=2, default=str) + "\n"


def run(args: argparse.Namespace) -> int:
    root = (args.root or default_root()).resolve()
    output = args.output or root / DEFAULT_OUTPUT
    cat = load_catalog(root)
    data, page = build(cat, partial(recipe_benchmarks, cat))
    fields = root / reference.OUTPUT
    undocumented = [f"{name}: no documentation (a description= in catalog/schema/, or an entry in "
                    "infermatrix/catalog/field_docs.py)" for name in reference.undocumented()]
    undocumented += [f"{name}: documented in field_docs.py, but no such field"
                     for name in reference.stale()]
    if undocumented:
        for line in undocumented:
            print(f"infermatrix catalog: {line}", file=sys.stderr)
        return 1
    if args.check:
        stale = []
        if not output.is_file() or output.read_text(encoding="utf-8") != page:
            stale.append(str(output))
        if not fields.is_file() or fields.read_text(encoding="utf-8") != reference.markdown():
            stale.append(str(fields))
        if args.json and (not args.json.is_file() or args.json.read_text(encoding="utf-8") != _json_text(data)):
            stale.append(str(args.json))
        if stale:
            print(f"infermatrix catalog: {', '.join(stale)} out of date: run `infermatrix catalog`"
                  + (f" --json {args.json}" if args.json else ""), file=sys.stderr)
            return 1
        print(f"ok: {output} ({data['count']} configurations) and {fields} are current")
        return 0
    write_text_atomic(output, page)
    write_text_atomic(fields, reference.markdown())
    if args.json:
        write_json_atomic(args.json, data)
    print(f"wrote {output} ({data['count']} configurations), {fields}"
          + (f" and {args.json}" if args.json else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="infermatrix catalog", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (CatalogError, RenderError) as exc:
        print(exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
