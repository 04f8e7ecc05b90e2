"""Step times for one engine instance: the entry point the scheduler calls.

A step processes a batch: some sequences decode (one new token each, or 1 + draft tokens with
speculative decoding), some prefill a chunk of their prompt. ``PerfModel.step_time(shape)``
returns how long it takes; the per-operator model behind it (attention by architecture, MoE
with its efficiency curve and imbalance, dense MLP, norms, collectives by fabric, sampling,
host overhead) lives in operators.py, its efficiencies in data/efficiency.yaml. docs/sim.md
explains both.
"""

from __future__ import annotations

import numpy as np

from .batch_shape import BatchShape
from .config import SimConfig
from .operators import StepModel

__all__ = ["BatchShape", "PerfModel"]


class PerfModel:
    """The stable interface of the step model: ``step_time``, ``decode_time``,
    ``decode_times`` (a decode phase at once), ``prefill_time`` (signatures unchanged whatever
    the model inside)."""

    def __init__(self, cfg: SimConfig):
        self.cfg = cfg
        self.model = StepModel(cfg)
        self._step = self.model.step_time
        self.scale = cfg.step_scale  # an experiment's slowdown or night noise (sim/variation.py)
        if self.scale != 1.0:
            self._step = lambda *shape: self.scale * self.model.step_time(*shape)

    def weights_s(self, tokens: int) -> float:
        """Time to stream the weights one step touches: dense always, experts as routed."""
        return self.model.weights_s(tokens)

    def step_time(self, b: BatchShape) -> float:
        return self._step(b.tokens, b.seqs, b.kv_read, b.attn_pairs, b.draft_tokens, b.busiest)

    def decode_time(self, seqs: int, context: int, draft_per_seq: int = 0) -> float:
        """A pure decode step of ``seqs`` sequences holding ``context`` tokens in total."""
        return self._step(seqs, seqs, context + seqs, context + seqs, seqs * draft_per_seq)

    def decode_times(self, seqs: int, contexts: np.ndarray, draft_per_seq: int = 0) -> np.ndarray:
        """``decode_time(seqs, c, draft_per_seq)`` for every ``c`` of ``contexts`` (ints) at
        once, equal to those calls: the steps of a decode phase, whose batch only grows."""
        times = self.model.decode_steps(seqs, contexts + seqs, seqs * draft_per_seq)
        return times if self.scale == 1.0 else times * self.scale

    def prefill_time(self, tokens: int, prior: int = 0) -> float:
        """One sequence prefilling ``tokens`` on top of ``prior`` cached tokens, alone."""
        pairs = tokens * prior + tokens * (tokens + 1) / 2
        return self._step(tokens, 1, prior + tokens, pairs)
