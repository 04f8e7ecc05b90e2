"""A job's session plan as the client's session source (paths resolved against the catalog)."""

from __future__ import annotations

from pathlib import Path

from ..client.session_sources import SessionSource, load_source
from ..client.tokenizer import Tokenizer
from ..plan.measurement import SessionPlan


def source_of(plan: SessionPlan, root: Path, tok: Tokenizer) -> SessionSource:
    path = str(root / plan.path) if plan.path else None
    return load_source(plan.source, tok, path=path, synthetic=plan.synthetic,
                       block_size=plan.block_size, tool_delay_s=plan.tool_delay_s, seed=plan.seed)
