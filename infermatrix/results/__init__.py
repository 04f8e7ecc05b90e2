"""Results: raw level results → records → history store, Pareto frontiers, comparisons.

It reads result files and the store only (docs/results.md). ``collect`` here is the function
(``infermatrix.results.collect.collect``); the module stays importable by its full name.
"""

from .collect import CollectResult, CollectSummary, collect
from .records import Record, normalise, run_order

__all__ = ["CollectResult", "CollectSummary", "Record", "collect", "normalise", "run_order"]
