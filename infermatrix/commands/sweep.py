"""`infermatrix sweep` in the CLI layer: launch/ runs the sweep's jobs; capacity/ (above
launch/) brings the measurement of its capacity jobs."""

from __future__ import annotations

import argparse

from ..capacity import job as capacity_jobs
from ..launch import sweep_cli
from ..launch.sweep_cli import add_arguments

__all__ = ["add_arguments", "main"]


def main(args: argparse.Namespace) -> int:
    args.capacity_jobs = capacity_jobs
    return sweep_cli.main(args)
