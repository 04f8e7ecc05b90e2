"""Time the MoE GEMMs that run 4-bit (MXFP4) experts on Hopper in vLLM, at gpt-oss's shapes,
from a few tokens an expert to thousands (docs/sim.md "4-bit experts on Hopper": the w4a16
grouped-GEMM rows' tile, shares and fixed time).

    python scripts/measure_mxfp4_moe.py --kernel marlin --lib PATH/_moe_C_stable_libtorch.abi3.so --out m.json
    python scripts/measure_mxfp4_moe.py --kernel triton --triton-kernels PATH/vllm/third_party --out t.json
    python scripts/measure_mxfp4_moe.py --plan [--kernel K] [--tp N]   # CPU: the points, no timing

Two kernels, each as vLLM calls it, from an installed vLLM wheel (vLLM 0.26.0 is built for
torch 2.11 and CUDA 13):

- ``marlin`` (vLLM's SM90 MXFP4 backend up to 0.11.x, whose wheels ship without
  triton_kernels): the ``_moe_C`` ops of the wheel's MoE extension. ``moe_align_block_size``
  sorts the routed tokens into ``block_size_m``-row tiles per expert (``fused_marlin_moe``'s
  choice: the smallest of 8, 16, 32, 48, 64 with tokens x top-k / experts / block < 0.9) and
  ``moe_wna16_marlin_gemm`` runs gate_up and down. Shapes padded as vLLM pads them for Marlin
  (hidden 2,880 -> 3,072, intermediate to a multiple of 128; ``--tp N``: one GPU's share).
  Each GEMM is one launch, timed with CUDA events around the call.
- ``triton`` (vLLM's SM90 backend from 0.12.0, which vendors triton_kernels): ``routing``,
  then ``matmul_ogs`` for gate_up (with its fused SwiGLU) and down (scattering the k rows
  back), weights and scales swizzled to the Hopper MXFP4 layouts with split-K 1, as vLLM's
  ``_swizzle_mxfp4`` sets them. Several launches a GEMM, so each GEMM is captured in a CUDA
  graph and its replays are timed (vLLM replays decode steps from graphs too).

Weights and scales are random bytes (timing does not depend on their values; every scale
1.0). Each point is the median of 20 timings after warm-up calls. Writes, per model and token
count: experts touched, tokens per touched expert, the two GEMMs' milliseconds, the FLOPs of
the routed tokens (no padding) and the expert bytes read, with TFLOP/s and GB/s.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HIDDEN = 2880  # gpt-oss's hidden size and expert intermediate size (config.json)
MODELS = {"gpt-oss-120b": (128, 4), "gpt-oss-20b": (32, 4)}  # experts, top-k
TOKENS = (1, 4, 8, 16, 32, 64, 128, 232, 512, 1024, 2048, 4096, 8192, 16384)
GROUP = 32  # MXFP4 block: one E8M0 scale per 32 weights along K
# vllm.scalar_type.scalar_types.float4_e2m1f.id (the id the Marlin op takes for MXFP4 weights)
FLOAT4_E2M1F_ID = 562949953487106
SWIGLU = (1.702, 7.0)  # gpt-oss's SwiGLU alpha and limit
REPS, WARMUP = 20, 3


def round_up(x: int, to: int) -> int:
    return -(-x // to) * to


def shapes(kernel: str, tp: int) -> tuple[int, int]:
    """(hidden, one GPU's intermediate) as vLLM pads them for the kernel: Marlin rounds hidden
    up to 256 and the intermediate to 128; the triton path keeps gpt-oss's multiples of 32."""
    share = -(-HIDDEN // tp)
    if kernel == "marlin":
        return round_up(HIDDEN, 256), round_up(share, 128)
    return HIDDEN, round_up(share, GROUP)


def block_size_m(tokens: int, top_k: int, experts: int) -> int:
    """vLLM's fused_marlin_moe tile: the smallest of 8..64 rows that the mean tokens an expert
    fill to under 0.9."""
    for block in (8, 16, 32, 48, 64):
        if tokens * top_k / experts / block < 0.9:
            return block
    return 64


def plan(kernel: str, tp: int = 1, models: tuple[str, ...] = tuple(MODELS)) -> list[dict[str, Any]]:
    hidden, inter = shapes(kernel, tp)
    return [{"kernel": kernel, "model": name, "tp": tp, "experts": e, "top_k": k, "tokens": t,
             "hidden": hidden, "intermediate": inter,
             **({"block_size_m": block_size_m(t, k, e)} if kernel == "marlin" else {})}
            for name, (e, k) in MODELS.items() if name in models for t in TOKENS]


def median_ms(torch: Any, call: Callable[[], Any]) -> float:
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


def graph_ms(torch: Any, call: Callable[[], Any]) -> float:
    """A multi-launch call's GPU time: captured once, its replays timed."""
    call()
    call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    return median_ms(torch, graph.replay)


def routed_ids(torch: Any, tokens: int, experts: int, top_k: int, gen: Any) -> Any:
    """Each token routed to top_k distinct experts, uniformly (as random prompts spread)."""
    scores = torch.rand(tokens, experts, device="cuda", generator=gen)
    return scores.argsort(dim=1)[:, :top_k].to(torch.int32)


class Marlin:
    """vLLM's Marlin MoE GEMMs from its MoE extension's ``_moe_C`` ops."""

    def __init__(self, torch: Any, lib: Path):
        torch.ops.load_library(str(lib))
        self.torch, self.ops = torch, torch.ops._moe_C

    def times(self, p: dict[str, Any], gen: Any) -> tuple[float, float, Any]:
        torch, ops = self.torch, self.ops
        e, k, t, bm = p["experts"], p["top_k"], p["tokens"], p["block_size_m"]
        hidden, inter = p["hidden"], p["intermediate"]
        ids = routed_ids(torch, t, e, k, gen)
        weights = torch.full((t, k), 1.0 / k, device="cuda", dtype=torch.float32)
        padded = ids.numel() + e * (bm - 1)
        if ids.numel() < e:
            padded = min(ids.numel() * bm, padded)
        sorted_ids = torch.empty(padded, dtype=torch.int32, device="cuda")
        expert_ids = torch.empty(-(-padded // bm), dtype=torch.int32, device="cuda")
        post_pad = torch.empty(1, dtype=torch.int32, device="cuda")
        ops.moe_align_block_size(ids, e, bm, sorted_ids, expert_ids, post_pad, None)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        workspace = torch.zeros(sms * 4, dtype=torch.int32, device="cuda")
        out = []
        for a, size_m, n, kk, top_k, mul in (
                (torch.randn(t, hidden, device="cuda", dtype=torch.bfloat16), t, 2 * inter,
                 hidden, k, False),
                (torch.randn(t * k, inter, device="cuda", dtype=torch.bfloat16), t * k, hidden,
                 inter, 1, True)):
            # Marlin's packed 4-bit weights, (experts, K / 16, N x 2) int32, and one E8M0
            # scale (127: 1.0) a group of 32 along K
            w = torch.randint(-2**31, 2**31 - 1, (e, kk // 16, n * 2), device="cuda",
                              dtype=torch.int32, generator=gen)
            s = torch.full((e, kk // GROUP, n), 127, device="cuda",
                           dtype=torch.uint8).view(torch.float8_e8m0fnu)
            c = torch.empty(size_m * top_k, n, device="cuda", dtype=torch.bfloat16)

            def call(a=a, c=c, w=w, s=s, size_m=size_m, n=n, kk=kk, top_k=top_k,
                     mul=mul) -> None:
                ops.moe_wna16_marlin_gemm(a, c, w, None, s, None, None, None, None, None,
                                          workspace, sorted_ids, expert_ids, post_pad, weights,
                                          bm, top_k, mul, FLOAT4_E2M1F_ID, size_m, n, kk, True,
                                          False, True, False, -1, -1, -1)
            out.append(median_ms(torch, call))
        return out[0], out[1], ids


class Triton:
    """triton_kernels' routing and matmul_ogs, as vLLM's SM90 triton MXFP4 path calls them."""

    def __init__(self, torch: Any, folder: Path | None):
        if folder is not None:
            sys.path.insert(0, str(folder))
        import triton_kernels.matmul_ogs_details.opt_flags as opt_flags
        import triton_kernels.swiglu as swiglu
        from triton_kernels import matmul_ogs, numerics, routing, tensor
        from triton_kernels.tensor_details import layout

        opt_flags.update_opt_flags_constraints({"split_k": 1})  # vLLM's setting on Hopper
        self.torch, self.mm, self.routing = torch, matmul_ogs, routing.routing
        self.tensor, self.layout, self.flex = tensor, layout, numerics.InFlexData
        self.act = matmul_ogs.FusedActivation(
            matmul_ogs.FnSpecs("swiglu", swiglu.swiglu_fn, ("alpha", "limit")), SWIGLU, 2)
        self.experts: tuple[tuple[int, int, int], Any] | None = None  # (shape, weights) of a model

    def weights(self, e: int, n: int, k: int, gen: Any) -> Any:
        """Random MXFP4 experts (e, n, k / 2) and their scales, in the Hopper layouts."""
        torch, tensor, layout = self.torch, self.tensor, self.layout
        q = torch.randint(0, 256, (e, n, k // 2), device="cuda", dtype=torch.uint8, generator=gen)
        s = torch.full((e, n, k // GROUP), 127, device="cuda", dtype=torch.uint8)
        s = torch.nn.functional.pad(s, (0, -s.shape[-1] % 4))  # scale groups to 0 mod 4
        q, s = q.transpose(-2, -1), s.transpose(-2, -1)
        value, value_opts = layout.make_default_matmul_mxfp4_w_layout(mx_axis=1)
        scale, scale_opts = layout.make_default_matmul_mxfp4_w_scale_layout(mx_axis=1,
                                                                            num_warps=8)
        q = tensor.convert_layout(tensor.wrap_torch_tensor(q, dtype=tensor.FP4), value,
                                  **value_opts)
        s = tensor.convert_layout(tensor.wrap_torch_tensor(s), scale, **scale_opts)
        return q, self.mm.PrecisionConfig(weight_scale=s,
                                          flex_ctx=self.mm.FlexCtx(rhs_data=self.flex()))

    def times(self, p: dict[str, Any], gen: Any) -> tuple[float, float, Any]:
        torch, mm = self.torch, self.mm
        e, k, t, hidden, inter = p["experts"], p["top_k"], p["tokens"], p["hidden"], p["intermediate"]
        shape = (e, hidden, inter)
        if self.experts is None or self.experts[0] != shape:  # the experts, once a model
            self.experts = shape, (self.weights(e, 2 * inter, hidden, gen),
                                   self.weights(e, hidden, inter, gen))
        (w1, pc1), (w2, pc2) = self.experts[1]
        x = torch.randn(t, hidden, device="cuda", dtype=torch.bfloat16)
        logits = torch.randn(t, e, device="cuda", dtype=torch.float32, generator=gen)
        routing, gather, scatter = self.routing(logits, k)
        mid = mm.matmul_ogs(x, w1, None, routing, gather_indx=gather, precision_config=pc1,
                            fused_activation=self.act).view(t * k, inter)
        gate_up = graph_ms(torch, lambda: mm.matmul_ogs(
            x, w1, None, routing, gather_indx=gather, precision_config=pc1,
            fused_activation=self.act))
        down = graph_ms(torch, lambda: mm.matmul_ogs(
            mid, w2, None, routing, scatter_indx=scatter, precision_config=pc2))
        return gate_up, down, torch.topk(logits, k, dim=1).indices


def measure(torch: Any, kernel: Any, p: dict[str, Any]) -> dict[str, Any]:
    gen = torch.Generator(device="cuda").manual_seed(p["tokens"])
    gate_up, down, ids = kernel.times(p, gen)
    touched = int(torch.unique(ids).numel())
    t, k, hidden, inter = p["tokens"], p["top_k"], p["hidden"], p["intermediate"]
    out = dict(p, touched=touched, tokens_per_expert=t * k / touched)
    for name, ms, n, kk in (("gate_up", gate_up, 2 * inter, hidden),
                            ("down", down, hidden, inter)):
        flops = 2.0 * t * k * n * kk
        weight_bytes = touched * n * kk * (0.5 + 1 / GROUP)
        out[name] = {"ms": ms, "flops": flops, "weight_bytes": weight_bytes,
                     "tflops": flops / ms / 1e9, "gbps": weight_bytes / ms / 1e6}
    return out


def find_vllm() -> Path | None:
    """The installed vLLM's package folder, found without importing vLLM."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def load_kernel(torch: Any, args: argparse.Namespace) -> Any:
    """The kernel to time, or a one-line reason it cannot be loaded (SystemExit 2)."""
    vllm = find_vllm()
    if args.kernel == "marlin":
        lib = args.lib or (vllm / "_moe_C_stable_libtorch.abi3.so" if vllm else None)
        if lib is None or not lib.is_file():
            raise SystemExit(f"measure_mxfp4_moe: no vLLM MoE extension at "
                             f"{lib or '(vllm not installed)'}; give --lib")
        return Marlin(torch, lib)
    folder = args.triton_kernels or (vllm / "third_party" if vllm else None)
    if folder is not None and not (folder / "triton_kernels").is_dir():
        raise SystemExit(f"measure_mxfp4_moe: no triton_kernels package in {folder}; "
                         "give --triton-kernels")
    return Triton(torch, folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", choices=("marlin", "triton"), default="marlin")
    parser.add_argument("--lib", type=Path, help="marlin: vLLM's MoE extension (default: the "
                        "installed vLLM's _moe_C_stable_libtorch.abi3.so)")
    parser.add_argument("--triton-kernels", type=Path, help="triton: the folder holding the "
                        "triton_kernels package (default: the installed vLLM's third_party)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--plan", action="store_true", help="print the points, time nothing")
    parser.add_argument("--tp", type=int, default=1, choices=(1, 2, 4, 8),
                        help="tensor parallelism splitting the experts' intermediate width")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    points = plan(args.kernel, args.tp, tuple(args.models))
    if args.plan:
        print(json.dumps(points, indent=1))
        return 0
    if args.out is None:
        print("measure_mxfp4_moe: --out FILE is needed to measure", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("measure_mxfp4_moe: needs torch (pip install -e '.[profile]') and a CUDA GPU",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("measure_mxfp4_moe: needs a CUDA GPU (use --plan on a CPU)", file=sys.stderr)
        return 2
    try:
        kernel = load_kernel(torch, args)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    results, errors = [], []
    for point in points:
        try:
            got = measure(torch, kernel, point)
        except Exception as exc:  # keep the other points; say which one failed and why
            errors.append({"model": point["model"], "tokens": point["tokens"],
                           "error": f"{type(exc).__name__}: {exc}"[:400]})
            continue
        results.append(got)
        print(f"{got['kernel']} {got['model']} tp={got['tp']} tokens={got['tokens']:5d} "
              f"t/expert={got['tokens_per_expert']:7.1f} gate_up {got['gate_up']['ms']:.3f} ms "
              f"({got['gate_up']['tflops']:.0f} TF/s, {got['gate_up']['gbps']:.0f} GB/s) "
              f"down {got['down']['ms']:.3f} ms ({got['down']['tflops']:.0f} TF/s)", flush=True)
        args.out.write_text(json.dumps(document(torch, args.kernel, results, errors), indent=1))
    args.out.write_text(json.dumps(document(torch, args.kernel, results, errors), indent=1))
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    return 0 if results else 1


def document(torch: Any, kernel: str, results: list[Any], errors: list[Any]) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    return {"kernel": kernel, "device": props.name, "sms": props.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "python": platform.python_version(), "reps": REPS, "results": results,
            "errors": errors}


if __name__ == "__main__":
    sys.exit(main())
