"""`infermatrix run` in the CLI layer: launch/ runs the job through its one loop (levels or a
capacity search, on a launched server or in virtual time)."""

from __future__ import annotations

from ..launch.cli import add_arguments, main

__all__ = ["add_arguments", "main"]
