"""Errors a person can fix: the CLI prints them as one line and exits 2."""

from __future__ import annotations


class ClientInputError(Exception):
    """Bad input or an unusable server/tokenizer/dataset; message is one readable line."""
