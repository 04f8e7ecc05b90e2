"""`infermatrix sweep` in the CLI layer: plan, run every job through launch/'s one loop,
collect and report."""

from __future__ import annotations

from ..launch.sweep_cli import add_arguments, main

__all__ = ["add_arguments", "main"]
