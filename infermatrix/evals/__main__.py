"""`python -m infermatrix.evals check [--root DIR]`: validate matrix/accuracy.yaml and the sweeps'
eval policies; one `file:line: field: message` line per problem, exit 2 when there is any."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..catalog.loader import load_catalog
from ..catalog.yamlsrc import CatalogError
from .config import check_catalog


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infermatrix.evals", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate accuracy.yaml and the sweeps' eval policies")
    check.add_argument("--root", type=Path, help="catalog root (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        problems = check_catalog(load_catalog(args.root))
    except CatalogError as exc:
        problems = [str(p) for p in exc.problems]
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print("accuracy gate: matrix/accuracy.yaml and the sweeps' eval policies are valid")
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
