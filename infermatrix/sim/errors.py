"""The simulator's one error kind, below every module that raises it (config, variation)."""

from __future__ import annotations


class SimConfigError(ValueError):
    """A configuration that cannot be simulated; the message is one line for a person."""
