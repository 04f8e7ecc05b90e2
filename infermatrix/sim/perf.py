"""Roofline step times for one engine instance.

A step processes a batch: some sequences decode (one new token each, or 1 + draft tokens with
speculative decoding), some prefill a chunk of their prompt. Its time is

    max(compute, memory) + communication + overheads

compute = FLOPs (2 × active params × tokens + attention) / (GPUs × peak × efficiency)
memory  = bytes per GPU (weights, with only the touched experts for MoE, + KV read) /
          (HBM bandwidth × efficiency)
communication = tensor-parallel all-reduces and expert-parallel all-to-alls over the fabric.

Everything is precomputed into a few coefficients so the scheduler's hot loop does scalar math.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import SimConfig


@dataclass(frozen=True)
class BatchShape:
    """Aggregates of one step's batch; what the roofline needs and nothing else."""

    tokens: int  # new tokens whose KV is computed (prefill chunks + one per decoding sequence)
    seqs: int  # sequences in the batch
    kv_read: int  # sum over sequences of the context attended (prior + new tokens)
    attn_pairs: float  # sum over new tokens of the positions each attends to
    draft_tokens: int = 0  # speculative tokens verified on top of ``tokens``


class PerfModel:
    def __init__(self, cfg: SimConfig):
        t = cfg.tuning
        g = cfg.gpus
        self.cfg = cfg
        flops_rate = g * cfg.peak_flops * t.compute_efficiency
        self.s_per_token_compute = 2.0 * cfg.active_params / flops_rate
        # QK^T and PV: 2 FLOPs per multiply-add, 2 matmuls, hidden-sized per layer
        self.s_per_attn_pair = 4.0 * cfg.layers * cfg.hidden_size / flops_rate
        bw = cfg.hbm_bw * t.memory_efficiency
        expert_bytes = cfg.expert_params * cfg.bytes_per_param / cfg.weight_shards
        dense_bytes = cfg.weight_bytes_per_gpu - expert_bytes
        self.dense_weight_s = dense_bytes / bw
        self.expert_weight_s = expert_bytes / (cfg.hbm_bw * t.moe_memory_efficiency)
        self.expert_miss = (1.0 - cfg.moe_active_experts / cfg.moe_experts) if cfg.moe_experts else 1.0
        self.s_per_kv_token = cfg.kv_bytes_per_token / cfg.kv_shards / bw
        # tensor parallel: two all-reduces per layer over the attention TP group
        fabric = cfg.fabric_bw
        tp = cfg.tp // cfg.dp if cfg.attention_dp else cfg.tp
        n_ar = 2 * cfg.layers if tp > 1 else 0
        ring = 2.0 * (tp - 1) / tp if tp > 1 else 0.0
        self.comm_fixed = n_ar * t.allreduce_latency_s
        self.comm_per_token = n_ar * ring * cfg.hidden_size * t.activation_bytes / fabric
        if cfg.ep > 1 and cfg.moe_experts:
            # dispatch (fp8, 1 byte) + combine (activation dtype) of k expert copies per token,
            # spread over the GPUs; the share (ep-1)/ep leaves the GPU
            share = (cfg.ep - 1) / cfg.ep
            self.comm_fixed += 2 * cfg.layers * t.all_to_all_latency_s
            self.comm_per_token += (cfg.layers * cfg.moe_active_experts * cfg.hidden_size
                                    * (1.0 + t.activation_bytes) * share / g / fabric)
        if cfg.pp > 1:
            self.comm_fixed += (cfg.pp - 1) * t.allreduce_latency_s
            self.comm_per_token += (cfg.pp - 1) * cfg.hidden_size * t.activation_bytes / fabric
        self.fixed_overhead = t.step_overhead_s + cfg.layers * t.per_layer_overhead_s
        self.per_seq_overhead = t.per_seq_overhead_s
        self.draft_cost = t.draft_cost_fraction

    def weights_s(self, tokens: int) -> float:
        """Time to stream the weights one step touches: dense always, experts as routed."""
        if self.expert_weight_s == 0.0:
            return self.dense_weight_s
        touched = 1.0 - self.expert_miss ** tokens
        return self.dense_weight_s + self.expert_weight_s * touched

    def step_time(self, b: BatchShape) -> float:
        if b.seqs == 0:
            return 0.0
        work = b.tokens + b.draft_tokens
        compute = self.s_per_token_compute * work + self.s_per_attn_pair * b.attn_pairs
        memory = self.weights_s(work) + self.s_per_kv_token * b.kv_read
        core = max(compute, memory)
        if b.draft_tokens:
            core *= 1.0 + self.draft_cost * b.draft_tokens / b.seqs
        return (core + self.comm_fixed + self.comm_per_token * work
                + self.fixed_overhead + self.per_seq_overhead * b.seqs)

    def decode_time(self, seqs: int, context: int, draft_per_seq: int = 0) -> float:
        """A pure decode step of ``seqs`` sequences holding ``context`` tokens in total."""
        draft = seqs * draft_per_seq
        return self.step_time(BatchShape(seqs, seqs, context + seqs, context + seqs, draft))

    def prefill_time(self, tokens: int, prior: int = 0) -> float:
        """One sequence prefilling ``tokens`` on top of ``prior`` cached tokens, alone."""
        pairs = tokens * prior + tokens * (tokens + 1) / 2
        return self.step_time(BatchShape(tokens, 1, prior + tokens, pairs))
