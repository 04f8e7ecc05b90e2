"""`infermatrix run` in the CLI layer: launch/ runs the job; capacity/ (above launch/) brings
the measurement of a capacity job."""

from __future__ import annotations

import argparse

from ..capacity import job as capacity_jobs
from ..launch import cli
from ..launch.cli import add_arguments

__all__ = ["add_arguments", "main"]


def main(args: argparse.Namespace) -> int:
    args.capacity_jobs = capacity_jobs
    return cli.main(args)
