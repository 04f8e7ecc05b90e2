"""infermatrix: an open benchmark system for LLM inference serving."""

__version__ = "0.1.0"
