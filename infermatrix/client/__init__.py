"""Benchmark client for OpenAI-compatible LLM servers (bench_serving-compatible).

Standalone: imports nothing else of the infermatrix package.

    from infermatrix.client import BenchConfig, run_benchmark_sync, write_result
    result = run_benchmark_sync(BenchConfig(base_url="http://127.0.0.1:8000", max_concurrency=8))
    write_result(result, "out.json")
"""

from .bench import run_benchmark, run_benchmark_sync
from .config import BenchConfig, Timeouts
from .errors import ClientInputError
from .result import SCHEMA_VERSION, write_result

__all__ = [
    "SCHEMA_VERSION",
    "BenchConfig",
    "ClientInputError",
    "Timeouts",
    "run_benchmark",
    "run_benchmark_sync",
    "write_result",
]
