"""The simulated inference engine: an OpenAI-compatible server over a continuous-batching
scheduler and a per-operator performance model, runnable in real time or in virtual time.

Python API:
    SimConfig.from_recipe(catalog, recipe_id) / SimConfig.from_parts(catalog, hw, model, precision, tp=...)
    simulate(config, [SimRequest(...)], concurrency=N) -> SimRun (per-request SimResult timings)
The HTTP server lives in ``infermatrix.sim.server`` (aiohttp is imported only there and in its
``server_*`` modules).
"""

from .config import SimConfig, SimConfigError
from .tuning import Tuning
from .virtual import SegmentHasher, SimRequest, SimResult, SimRun, segment_hashes, simulate

__all__ = ["SegmentHasher", "SimConfig", "SimConfigError", "SimRequest", "SimResult", "SimRun",
           "Tuning", "segment_hashes", "simulate"]
