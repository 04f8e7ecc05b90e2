"""Time the Marlin MoE GEMMs that run 4-bit (MXFP4) experts on Hopper in vLLM and SGLang, at
gpt-oss's shapes, from a few tokens an expert to thousands (docs/sim.md "4-bit experts on
Hopper": the w4a16 grouped-GEMM rows' tile and compute share).

    python scripts/measure_marlin_moe.py --lib PATH/_moe_C_stable_libtorch.abi3.so --out m.json
    python scripts/measure_marlin_moe.py --plan            # CPU: the shapes and tiles, no timing
    python scripts/measure_marlin_moe.py --tp 8 --models gpt-oss-120b --out m8.json   # one TP8 GPU

The kernels are vLLM's own, loaded from an installed vLLM wheel's MoE extension (vLLM 0.26.0 is
built against torch 2.11 and CUDA 13; its ``_moe_C_stable_libtorch`` extension registers the
``_moe_C`` ops): ``moe_align_block_size`` sorts the routed tokens into ``block_size_m``-row
tiles per expert, and ``moe_wna16_marlin_gemm`` runs gate_up (N = 2 x intermediate) and down,
as vLLM's ``fused_marlin_moe`` calls them. ``block_size_m`` follows that function's choice: the
smallest of 8, 16, 32, 48, 64 with tokens x top-k / experts / block < 0.9. Weights and scales
are random bytes in Marlin's packed layout (timing does not depend on their values); the shapes
are gpt-oss's, rounded up as vLLM pads them for Marlin (hidden 2,880 -> 3,072, intermediate
2,880 -> 2,944; with ``--tp N`` one GPU's share of the intermediate, 2,880 / N rounded up to
128). Each point is the median of CUDA-event timings after warm-up calls.

Writes, per model and token count: experts touched, tokens per touched expert, block_size_m,
the two GEMMs' milliseconds, the FLOPs of the routed tokens (no padding) and the expert bytes
read, and the achieved TFLOP/s and GB/s.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

# gpt-oss's experts: hidden 2,880 and intermediate 2,880 (config.json), rounded up as vLLM's
# MXFP4 oracle pads them for Marlin on CUDA (hidden to 256, intermediate to 128)
HIDDEN, INTERMEDIATE_FULL = 3072, 2880
MODELS = {"gpt-oss-120b": (128, 4), "gpt-oss-20b": (32, 4)}  # experts, top-k
TOKENS = (1, 4, 8, 16, 32, 64, 128, 232, 512, 1024, 2048, 4096, 8192, 16384)
GROUP = 32  # MXFP4 block: one E8M0 scale per 32 weights along K
# vllm.scalar_type.scalar_types.float4_e2m1f.id (the id the op takes for MXFP4 weights)
FLOAT4_E2M1F_ID = 562949953487106
REPS, WARMUP = 20, 3


def block_size_m(tokens: int, top_k: int, experts: int) -> int:
    """vLLM's fused_marlin_moe tile: the smallest of 8..64 rows that the mean tokens an expert
    fill to under 0.9."""
    for block in (8, 16, 32, 48, 64):
        if tokens * top_k / experts / block < 0.9:
            return block
    return 64


def intermediate(tp: int) -> int:
    """One GPU's share of the experts' intermediate width, padded for Marlin (to 128)."""
    share = -(-INTERMEDIATE_FULL // tp)
    return -(-share // 128) * 128


def plan(tp: int = 1, models: tuple[str, ...] = tuple(MODELS)) -> list[dict[str, Any]]:
    n = intermediate(tp)
    return [{"model": name, "tp": tp, "experts": e, "top_k": k, "tokens": t,
             "block_size_m": block_size_m(t, k, e), "intermediate": n,
             "gate_up": {"n": 2 * n, "k": HIDDEN},
             "down": {"n": HIDDEN, "k": n}}
            for name, (e, k) in MODELS.items() if name in models for t in TOKENS]


def find_lib() -> Path | None:
    """The installed vLLM's MoE extension, found without importing vLLM."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for name in ("_moe_C_stable_libtorch.abi3.so", "_moe_C.abi3.so"):
            if (Path(folder) / name).is_file():
                return Path(folder) / name
    return None


def _median_ms(torch: Any, call: Any) -> float:
    for _ in range(WARMUP):
        call()
    times = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def measure(torch: Any, point: dict[str, Any]) -> dict[str, Any]:
    ops = torch.ops._moe_C
    dev = torch.device("cuda")
    e, k, t, bm = point["experts"], point["top_k"], point["tokens"], point["block_size_m"]
    inter_n = point["intermediate"]
    gen = torch.Generator(device=dev).manual_seed(t)
    # each token routes to k distinct experts, uniformly (as random prompts spread)
    topk_ids = torch.rand(t, e, device=dev, generator=gen).argsort(dim=1)[:, :k].to(torch.int32)
    topk_weights = torch.full((t, k), 1.0 / k, device=dev, dtype=torch.float32)
    padded = topk_ids.numel() + e * (bm - 1)
    if topk_ids.numel() < e:
        padded = min(topk_ids.numel() * bm, padded)
    sorted_ids = torch.empty(padded, dtype=torch.int32, device=dev)
    expert_ids = torch.empty(-(-padded // bm), dtype=torch.int32, device=dev)
    post_pad = torch.empty(1, dtype=torch.int32, device=dev)
    ops.moe_align_block_size(topk_ids, e, bm, sorted_ids, expert_ids, post_pad, None)
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    workspace = torch.zeros(sms * 4, dtype=torch.int32, device=dev)
    out: dict[str, Any] = dict(point)
    x = torch.randn(t, HIDDEN, device=dev, dtype=torch.bfloat16)
    inter = torch.randn(t * k, inter_n, device=dev, dtype=torch.bfloat16)
    touched = int(torch.unique(topk_ids).numel())
    for name, a, size_m, size_n, size_k, top_k, mul in (
            ("gate_up", x, t, 2 * inter_n, HIDDEN, k, False),
            ("down", inter, t * k, HIDDEN, inter_n, 1, True)):
        # Marlin's packed 4-bit weights: (experts, K / 16, N x 16 / 8) int32, and one E8M0
        # scale (127: 1.0) a group of 32 along K: (experts, K / 32, N)
        w = torch.randint(-2**31, 2**31 - 1, (e, size_k // 16, size_n * 2), device=dev,
                          dtype=torch.int32, generator=gen)
        s = torch.full((e, size_k // GROUP, size_n), 127, device=dev,
                       dtype=torch.uint8).view(torch.float8_e8m0fnu)
        c = torch.empty(size_m * top_k, size_n, device=dev, dtype=torch.bfloat16)

        def call(a=a, c=c, w=w, s=s, size_m=size_m, size_n=size_n, size_k=size_k,
                 top_k=top_k, mul=mul) -> None:
            ops.moe_wna16_marlin_gemm(a, c, w, None, s, None, None, None, None, None, workspace,
                                      sorted_ids, expert_ids, post_pad, topk_weights, bm, top_k,
                                      mul, FLOAT4_E2M1F_ID, size_m, size_n, size_k, True, False,
                                      True, False, -1, -1, -1)
        ms = _median_ms(torch, call)
        flops = 2.0 * t * k * size_n * size_k
        weight_bytes = touched * size_n * size_k * (0.5 + 1 / GROUP)
        out[name] = {"ms": ms, "flops": flops, "weight_bytes": weight_bytes,
                     "tflops": flops / ms / 1e9, "gbps": weight_bytes / ms / 1e6}
    out["touched"] = touched
    out["tokens_per_expert"] = t * k / touched
    out["padded_rows"] = int(post_pad.item())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", type=Path, help="vLLM's _moe_C extension (default: the "
                        "installed vLLM's)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--plan", action="store_true", help="print the points, time nothing")
    parser.add_argument("--tp", type=int, default=1, choices=(1, 2, 4, 8),
                        help="tensor parallelism splitting the experts' intermediate width")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    points = plan(args.tp, tuple(args.models))
    if args.plan:
        print(json.dumps(points, indent=1))
        return 0
    if args.out is None:
        print("measure_marlin_moe: --out FILE is needed to measure", file=sys.stderr)
        return 2
    lib = args.lib or find_lib()
    if lib is None or not lib.is_file():
        print(f"measure_marlin_moe: no vLLM MoE extension at {lib or '(vllm not installed)'}; "
              "give --lib", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("measure_marlin_moe: needs a CUDA GPU (use --plan on a CPU)", file=sys.stderr)
        return 2
    torch.ops.load_library(str(lib))
    results, errors = [], []
    for point in points:
        try:
            got = measure(torch, point)
        except Exception as exc:  # keep the other points; say which one failed and why
            errors.append({"model": point["model"], "tokens": point["tokens"],
                           "error": f"{type(exc).__name__}: {exc}"[:400]})
            continue
        results.append(got)
        print(f"{got['model']} tp={got['tp']} tokens={got['tokens']:5d} t/expert={got['tokens_per_expert']:7.1f} "
              f"bm={got['block_size_m']:2d} gate_up {got['gate_up']['ms']:.3f} ms "
              f"({got['gate_up']['tflops']:.0f} TF/s, {got['gate_up']['gbps']:.0f} GB/s) "
              f"down {got['down']['ms']:.3f} ms ({got['down']['tflops']:.0f} TF/s)", flush=True)
        args.out.write_text(json.dumps(_document(torch, lib, results, errors), indent=1))
    args.out.write_text(json.dumps(_document(torch, lib, results, errors), indent=1))
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    return 0 if results else 1


def _document(torch: Any, lib: Path, results: list[Any], errors: list[Any]) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    return {"device": props.name, "sms": props.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
            "lib": lib.name, "hidden": HIDDEN, "reps": REPS,
            "results": results, "errors": errors}


if __name__ == "__main__":
    sys.exit(main())
