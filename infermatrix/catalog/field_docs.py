"""Texts of the schema's fields that have no ``description=`` in schema/ (reference.py
builds docs/fields.md from both). Keyed by ``Model.field``; a field added to the schema
needs one or the other (`infermatrix catalog --check` fails otherwise)."""

from __future__ import annotations

FIELD_DOCS: dict[str, str] = {
    # matrix/hardware.yaml: figures per GPU (or NPU die), each with its source in a comment
    "Hardware.vendor": "whose accelerator: picks the container device files, the visible-devices "
                       "variable and the simulator's vendor-wide efficiency rows",
    "Hardware.display_name": "the name pages and plots show (H200 SXM)",
    "Hardware.memory_gb": "device memory, GB as the datasheet writes it (binary: 80 means 80 GiB); weights must fit in 95% of it, read as decimal GB",
    "Hardware.hbm_tbps": "memory bandwidth, TB/s (the decode roofline of the simulator)",
    "Hardware.tflops": "dense (no 2:4 sparsity) TFLOP/s per compute dtype; a recipe's precision "
                       "needs its dtype here",
    "Hardware.gpus_per_node": "GPUs in one node: instances larger than this span whole nodes",
    "Hardware.tdp_w": "board power, W (energy per token when no power is measured)",
    "Hardware.usd_per_gpu_hour": "cost of one GPU-hour, USD (a market estimate; put your own "
                                 "price here to compare cost)",
    # matrix/models.yaml: from each model's config.json and model card
    "Model.hf_id": "Hugging Face repository id: the default checkpoint and tokenizer",
    "Model.display_name": "the name pages and plots show",
    "Model.total_params_b": "parameters, billions (weights memory: total × bytes per parameter "
                            "of the recipe's precision, or of each part's under mixed_precision)",
    "Model.active_params_b": "parameters used per token, billions (MoE: fewer than total)",
    "Model.layers": "transformer layers (config.json num_hidden_layers)",
    "Model.hidden_size": "model width (config.json hidden_size)",
    "Model.attention_heads": "query heads: attention tensor parallelism must divide them",
    "Model.kv_heads": "key/value heads (GQA: fewer than attention_heads; MLA: the heads)",
    "Model.attention": "attention kind, for the KV cache and the simulator's attention cost",
    "Model.max_context": "longest context, tokens (config.json max_position_embeddings): a "
                         "recipe's max_model_len may not exceed it",
    "Model.moe_experts": "routed experts per MoE layer (0: dense)",
    "Model.moe_active_experts": "experts each token is routed to",
    "MixedPrecision.experts": "the precision the checkpoint stores its routed experts in "
                              "(their bytes per parameter)",
    "MixedPrecision.rest": "the precision of every other weight: attention, router, dense and "
                           "shared MLPs, embeddings, LM head",
    # runners/fleets.yaml: one entry per GitHub runner label
    "Fleet.hardware": "the accelerator its nodes have (a name of matrix/hardware.yaml)",
    "Fleet.kind": "how `infermatrix run` starts servers there: docker on the runner's node, "
                  "slurm (salloc/sbatch + srun), ssh to fixed hosts, or local processes",
    "Fleet.gpus_per_node": "GPUs per node of this fleet",
    "Fleet.nodes": "nodes a job may use: recipes needing more are planned elsewhere or not at all",
    "Fleet.partition": "SLURM partition (--partition)",
    "Fleet.account": "SLURM account (--account)",
    "Fleet.model_cache": "where the fleet keeps model weights (a host path; mount it with mounts)",
    "Fleet.mounts": "host path → container path, added to every container",
    "Fleet.env": "environment of every process started there (HF_HOME, NCCL settings, …)",
    "Fleet.exclude_nodes": "SLURM nodes never to use (--exclude)",
    "Fleet.hosts": "ssh fleets: the hosts, in order (node 0 first)",
    "Fleet.ssh_user": "ssh fleets: the login (ssh -l); default: the runner's user",
    # matrix/workloads.yaml
    "Workload.kind": "fixed: independent requests of given lengths per concurrency level; "
                     "agentic: closed-loop sessions searched for capacity per SLO tier",
    "Workload.description": "one line for pages and the plan",
    "Workload.prompts_per_concurrency": "requests per level = this × concurrency (InferenceMAX: 10)",
    "Workload.min_prompts": "at least this many requests per level",
    "Workload.warmups_per_concurrency": "unmeasured warm-up requests per level = this × concurrency",
    "Workload.ignore_eos": "ask the server to generate exactly osl tokens",
    "Workload.endpoint": "completions (/v1/completions) or chat (/v1/chat/completions)",
    "Workload.flush_cache_between_levels": "flush the servers' prefix cache before each level",
    "Workload.max_error_rate": "a level with more failed requests than this share is failed",
    "AgenticSessions.source": "synthetic (from distributions), trace (a manifest of recorded "
                              "sessions) or mooncake (a Mooncake JSONL trace)",
    "SloTierSpec.name": "the tier's name in results and pages (SLO20)",
    # matrix/sweeps/NAME.yaml
    "Sweep.description": "one line for the plan and the workflow's choice list",
    "Sweep.entries": "what to run: each entry's recipes × its workloads × its levels",
    "SweepEntry.workloads": "workload names (matrix/workloads.yaml)",
    "EvalPolicy.enabled": "false: no evaluation for this entry",
    "EvalPolicy.at": "after which levels to evaluate: min, median, max, all, or a concurrency",
    "TaskOverride.num_fewshot": "few-shot examples (none: lm-eval's default)",
    "TaskOverride.max_gen_toks": "longest answer, tokens (none: lm-eval's default)",
    "TaskOverride.timeout_minutes": "time limit of this evaluation",
    "TaskOverride.task": "a task of matrix/accuracy.yaml",
    "CapacitySearchSpec.start": "first level, agents",
    "CapacitySearchSpec.max_concurrency": "the search never goes above this many agents",
}
