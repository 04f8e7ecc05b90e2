"""A layer's dense GEMMs on a measured profile's curve (profiles.py, opfit.py): the attention
projections (GQA/MHA: QKV and O; MLA: its low-rank projections and O) and the dense MLP
(gate_up and down, its width from the dense parameters a layer holds), each timed at its own
(N, K) shape on one GPU, as the profile measured them or as a serving step sustains them. A
block-scaled FP8 checkpoint on a build whose block-scaled kernels run below the profile's
per-tensor FP8 GEMMs takes the slower of the two: the profile's time and its FLOPs at that
kernel's share of the peak (``block_eff``, the tables' "fp8_block" rows)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import SimConfig
    from .opfit import OperatorFit

MAX_MEMO = 65536  # token counts remembered per clock (a run asks for a few hundred)


class ProfileGemms:
    def __init__(self, cfg: SimConfig, fit: OperatorFit, arch: Any, mla: bool, heads: int,
                 head_dim: float, tpa: int, p_dense: float, clock: float,
                 block_eff: float | None = None):
        h = cfg.hidden_size
        if mla:
            self.attn_gemms = [(cfg.whole_params / cfg.layers / h, h),  # the whole down-projections
                               (heads * arch.mla_qk_head / tpa, arch.mla_q_lora),
                               (heads * (arch.mla_qk_head - arch.mla_rope + arch.mla_v_head) / tpa,
                                arch.mla_latent),
                               (h, heads * arch.mla_v_head / tpa)]
        else:
            kv = max(cfg.kv_heads / tpa, 1.0)
            self.attn_gemms = [((heads / tpa + 2 * kv) * head_dim, h), (h, heads * head_dim / tpa)]
        inter = p_dense / (3 * h) / tpa
        self.dense_gemms = [(2 * inter, h), (h, inter)]
        self.curve = fit.gemm_for(cfg.matmul_dtype)
        self.bytes, self.hbm_bw = cfg.rest_bytes_per_param, cfg.hbm_bw
        # the compute peak as measured (burst) and as a serving step sustains it
        self.peaks = (cfg.peak_flops, cfg.peak_flops * clock)
        self.block_eff = block_eff
        # per-m times, as measured (burst) and as a serving step runs them (sustained)
        self._memos: tuple[dict[float, tuple[float, float]], ...] = ({}, {})

    def seconds(self, m: float, sustained: bool) -> tuple[float, float]:
        """(attention projections, dense MLP) at ``m`` tokens, as measured or ``sustained``."""
        memo = self._memos[sustained]
        got = memo.get(m)
        if got is None:
            g, b, bw, peak = self.curve, self.bytes, self.hbm_bw, self.peaks[sustained]
            block = peak * self.block_eff if self.block_eff else 0.0  # FLOP/s, 0: no cap
            got = tuple(sum(max(g.seconds(m, n, k, n * k * b, peak, bw),
                                2 * m * n * k / block if block else 0.0)
                            for n, k in shapes)  # type: ignore[assignment]
                        for shapes in (self.attn_gemms, self.dense_gemms))
            if len(memo) < MAX_MEMO:
                memo[m] = got  # type: ignore[assignment]
        return got  # type: ignore[return-value]
