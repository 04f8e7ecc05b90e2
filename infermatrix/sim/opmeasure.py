"""Measure the operator table of the GPU it runs on, with PyTorch: the measuring half of
``infermatrix sim profile`` (cli.py writes the profile around what this prints).

    python infermatrix/sim/opmeasure.py --out raw.json [--tiny] [--budget-s 240]

It needs torch and nothing else (torch is the optional ``profile`` extra, and the interpreter
that has it may be another virtual environment's: ``--python``), so it imports only torch and
the standard library, and runs as a script. Sections, as the measured H100 table names
them (docs/sim.md "Hardware profiles"): ``ref`` (HBM read and copy, large matmuls), ``gemm`` (a
dense model's QKV, O, gate_up, down and LM head at decode and prefill M, bf16 and fp8 where
the GPU has ``torch._scaled_mm``), ``attn_decode`` (batch × context, several SDPA kernels and
matmul-softmax-matmul), ``attn_prefill`` (causal), ``elementwise`` (a layer's norms, residual
adds and activation, unfused), ``sampling`` (argmax and a softmax + exponential-race sampler),
``decode_step`` (a whole decode step of every layer, captured as one CUDA graph; bf16, and the
TP8 shard in fp8) and
``collective`` (all-reduce over every visible GPU, where there are several).

Each timing is the median of ``reps`` timed runs of ``inner`` back-to-back calls (on a GPU: a
captured CUDA graph replayed, CUDA events; on a CPU: wall time), rotating the operands
through enough copies that the L2 cache cannot serve them. ``--tiny`` measures a tiny model
on the CPU (a 2-rank gloo all-reduce for the collective): the same code in seconds, for tests.
Whatever would pass the time budget is skipped and listed, never guessed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

# torch is imported by main() (importing this module, as the import-rules test does, must not
# need it: it is an optional extra)
torch: Any = None
F: Any = None

# model shapes: (hidden, q heads, kv heads, head dim, MLP width, vocab, layers, tp)
MODELS = {
    "llama-3.1-8b-tp1": (4096, 32, 8, 128, 14336, 128256, 32, 1),
    "llama-3.1-70b-tp8": (8192, 64, 8, 128, 28672, 128256, 80, 8),
}
TINY_MODELS = {"tiny-tp1": (256, 4, 2, 64, 512, 1024, 2, 1)}
FULL = {"decode_m": [1, 8, 16, 32, 64, 128, 256, 512], "prefill_m": [1024, 4096, 8192],
        "attn_batch": [1, 16, 64, 256], "attn_ctx": [1024, 4096, 16384],
        "prefill_t": [1024, 4096, 8192], "sampling_b": [1, 64, 256],
        "step": [[1, 1024], [16, 1024], [64, 1024], [256, 1024], [64, 4096], [16, 16384]],
        "step_fp8": [[1, 1024], [64, 1024], [256, 1024], [64, 4096]],
        "collective_bytes": [16384, 262144, 4194304, 67108864], "reps": 7, "target_ms": 2.0}
TINY = {"decode_m": [1, 8, 64], "prefill_m": [256, 512], "attn_batch": [1, 4],
        "attn_ctx": [128, 512], "prefill_t": [128, 256, 512], "sampling_b": [1, 8],
        "step": [[1, 128], [4, 128]], "step_fp8": [], "collective_bytes": [4096, 65536], "reps": 3,
        "target_ms": 1.0}
L2_DEFEAT_BYTES = 256 * 2**20  # operands rotate through at least this much memory (GPU)
MAX_COPIES = 64


def shard(spec: tuple[int, ...]) -> dict[str, Any]:
    h, hq, hkv, d, inter, vocab, layers, tp = spec
    q, kv, i = hq // tp, max(1, hkv // tp), inter // tp
    return {"hidden": h, "heads": hq, "kv_heads": hkv, "head_dim": d, "inter": inter,
            "vocab": vocab, "layers": layers, "tp": tp,
            "shard": {"hq": q, "hkv": kv, "d": d, "h": h, "inter": i, "vocab": vocab // tp,
                      "layers": layers, "tp": tp,
                      "gemms": {"qkv": [(q + 2 * kv) * d, h], "o": [h, q * d],
                                "gate_up": [2 * i, h], "down": [h, i],
                                "lm_head": [vocab // tp, h]}}}


class Timer:
    """Median seconds per call of a function of one operand set, on this device."""

    def __init__(self, device: torch.device, settings: dict[str, Any], deadline: float):
        self.device, self.settings, self.deadline = device, settings, deadline
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def time(self, call: Callable[[Any], Any], operands: list[Any]) -> dict[str, Any]:
        """``call(operands[i])`` round-robin; returns median_ms, spread, reps, graph."""
        call(operands[0])  # warm-up (kernel selection, lazy init)
        self.sync()
        t = time.perf_counter()
        call(operands[0])
        self.sync()
        once = max(time.perf_counter() - t, 1e-7)
        inner = max(1, min(256, int(self.settings["target_ms"] * 1e-3 / once)))
        reps = self.settings["reps"] if once * inner < 0.2 else 3
        if time.perf_counter() + once * inner * (reps + 2) > self.deadline:
            raise TimeoutError("over the time budget")
        run = self._graph(call, operands, inner) if self.cuda else None
        samples = []
        for _ in range(reps):
            if run is not None:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                run()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) / inner)
            else:
                t = time.perf_counter()
                for i in range(inner):
                    call(operands[i % len(operands)])
                self.sync()
                samples.append((time.perf_counter() - t) * 1e3 / inner)
        med = statistics.median(samples)
        return {"median_ms": med, "spread": (max(samples) - min(samples)) / med, "reps": reps,
                "graph": run is not None}

    def _graph(self, call: Callable[[Any], Any], operands: list[Any], inner: int
               ) -> Callable[[], None] | None:
        """A CUDA graph of ``inner`` calls (None where capture fails: timed eagerly)."""
        try:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for i in range(2):
                    call(operands[i % len(operands)])
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for i in range(inner):
                    call(operands[i % len(operands)])
            graph.replay()
            torch.cuda.synchronize()
            return graph.replay
        except RuntimeError:
            return None


def copies(nbytes: float, cuda: bool) -> int:
    return min(MAX_COPIES, max(1, math.ceil(L2_DEFEAT_BYTES / max(nbytes, 1)))) if cuda else 1


class Profiler:
    def __init__(self, tiny: bool, budget_s: float):
        self.tiny = tiny
        self.settings = TINY if tiny else FULL
        cuda = torch.cuda.is_available() and not tiny
        self.device = torch.device("cuda" if cuda else "cpu")
        self.cuda = cuda
        self.start = time.perf_counter()
        self.timer = Timer(self.device, self.settings, self.start + budget_s)
        self.results: list[dict[str, Any]] = []
        self.skipped: list[str] = []
        self.errors: list[dict[str, str]] = []
        self.models = {k: shard(v) for k, v in (TINY_MODELS if tiny else MODELS).items()}
        self.fp8 = (cuda and hasattr(torch, "_scaled_mm")
                    and torch.cuda.get_device_capability() >= (8, 9))

    # ------------------------------------------------------------------ bookkeeping
    def measure(self, rid: str, section: str, record: dict[str, Any],
                call: Callable[[Any], Any], operands: Callable[[], list[Any]]) -> None:
        """Time one entry; past the budget it is skipped, a refused kernel is an error."""
        if time.perf_counter() > self.timer.deadline:
            self.skipped.append(rid)
            return
        try:
            ops = operands()
            timing = self.timer.time(call, ops)
        except TimeoutError:
            self.skipped.append(rid)
            return
        except (RuntimeError, ValueError, TypeError) as exc:
            self.errors.append({"id": rid, "section": section,
                                "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"})
            return
        finally:
            if self.cuda:
                torch.cuda.empty_cache()
        self.results.append({**record, **timing, "id": rid, "section": section})

    def rand(self, *shape: int, dtype: Any = None) -> Any:
        dtype = torch.bfloat16 if dtype is None else dtype
        return (torch.randn(*shape, device=self.device, dtype=torch.float32) * 0.02).to(dtype)

    # ------------------------------------------------------------------ sections
    def ref(self) -> None:
        n = (2**31 if self.cuda else 2**24)
        self.measure("ref/hbm_read", "ref", {"op": "hbm_read", "bytes": n},
                     lambda x: x.sum(), lambda: [self.rand(n // 2)])
        self.measure("ref/hbm_copy", "ref", {"op": "hbm_copy", "bytes": 2 * n},  # read + write
                     lambda xy: xy[1].copy_(xy[0]), lambda: [(self.rand(n // 2), self.rand(n // 2))])
        s = 8192 if self.cuda else 256
        mm = {"m": s, "n": s, "k": s, "flops": 2 * s**3}
        self.measure("ref/mm_bf16", "ref", {"op": "mm_bf16", "dtype": "bf16", **mm},
                     lambda ab: ab[0] @ ab[1], lambda: [(self.rand(s, s), self.rand(s, s))])
        if self.fp8:
            self.measure("ref/mm_fp8", "ref", {"op": "mm_fp8", "dtype": "fp8", **mm},
                         lambda op: _linear(*op),
                         lambda: [(self.rand(s, s, dtype=torch.float8_e4m3fn),
                                   self.rand(s, s, dtype=torch.float8_e4m3fn),
                                   torch.ones((), device=self.device))])

    def gemm(self) -> None:
        ms = self.settings["decode_m"] + self.settings["prefill_m"]
        dtypes = ["bf16"] + (["fp8"] if self.fp8 else [])
        for dtype in dtypes:
            for model, spec in self.models.items():
                for name, (n, k) in spec["shard"]["gemms"].items():
                    for m in ms:
                        if name == "lm_head" and m > 512:
                            continue  # sampling runs the LM head on decode rows only
                        self._gemm(dtype, model, name, m, n, k)

    def _gemm(self, dtype: str, model: str, name: str, m: int, n: int, k: int) -> None:
        wbytes = n * k * (1 if dtype == "fp8" else 2)
        record = {"op": "gemm", "model": model, "name": name, "dtype": dtype, "m": m, "n": n,
                  "k": k, "flops": 2 * m * n * k, "weight_bytes": wbytes}
        cps = copies(wbytes, self.cuda)
        wdtype = torch.float8_e4m3fn if dtype == "fp8" else torch.bfloat16

        def make() -> list[Any]:  # the activation already quantised: the GEMM alone is timed
            one = torch.ones((), device=self.device)
            x = self.rand(m, k, dtype=wdtype)
            return [(x, self.rand(n, k, dtype=wdtype), one) for _ in range(cps)]

        def call(op: Any) -> Any:
            return _linear(*op)
        self.measure(f"gemm/{dtype}/{model}/{name}/M={m}", "gemm", record, call, make)

    def attention(self) -> None:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                    "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
        variants = ["flash", "cudnn", "efficient"] if self.cuda else ["math"]
        for model, spec in self.models.items():
            s = spec["shard"]
            hq, hkv, d = s["hq"], s["hkv"], s["d"]
            for b in self.settings["attn_batch"]:
                for ctx in self.settings["attn_ctx"]:
                    kv_bytes = 2 * b * ctx * hkv * d * 2
                    record = {"op": "attn_decode", "model": model, "dtype": "bf16", "batch": b,
                              "ctx": ctx, "q_heads": hq, "kv_heads": hkv, "head_dim": d,
                              "kv_bytes": kv_bytes, "flops": 4 * b * ctx * hq * d}
                    make = partial(self._qkv, b, (hq, hkv, d), 1, ctx, copies(kv_bytes, self.cuda))
                    for v in variants:
                        self.measure(f"attn_decode/{model}/B={b}/ctx={ctx}/{v}", "attn_decode",
                                     {**record, "variant": v}, _sdpa(backends[v], sdpa_kernel), make)
                    self.measure(f"attn_decode/{model}/B={b}/ctx={ctx}/matmul", "attn_decode",
                                 {**record, "variant": "matmul"}, _matmul_attention, make)
            for t in self.settings["prefill_t"]:
                record = {"op": "attn_prefill", "model": model, "dtype": "bf16", "tokens": t,
                          "q_heads": hq, "kv_heads": hkv, "head_dim": d,
                          "flops": 4.0 * hq * d * t * (t + 1) / 2}
                make_p = partial(self._qkv, 1, (hq, hkv, d), t, t, 1)
                for v in variants:
                    self.measure(f"attn_prefill/{model}/T={t}/{v}", "attn_prefill",
                                 {**record, "variant": v},
                                 _sdpa(backends[v], sdpa_kernel, causal=True), make_p)

    def _qkv(self, b: int, heads: tuple[int, int, int], t: int, ctx: int, cps: int) -> list[Any]:
        """``cps`` sets of (query, key, value): ``t`` queries against ``ctx`` keys each."""
        hq, hkv, d = heads
        q = self.rand(b, hq, t, d)
        return [(q, self.rand(b, hkv, ctx, d), self.rand(b, hkv, ctx, d)) for _ in range(cps)]

    def elementwise(self) -> None:
        for model, spec in self.models.items():
            h, i = spec["hidden"], spec["shard"]["inter"]
            for m in self.settings["decode_m"] + self.settings["prefill_m"]:
                record = {"op": "elementwise", "model": model, "dtype": "bf16", "m": m, "hidden": h,
                          "inter": i, "bytes": 2 * m * (8 * h + 3 * i), "kernels": 6}

                def make(m: int = m, h: int = h, i: int = i) -> list[Any]:
                    return [(self.rand(m, h), self.rand(m, h), self.rand(h), self.rand(m, 2 * i))]

                self.measure(f"elementwise/{model}/M={m}", "elementwise", record, _layer_elementwise,
                             make)

    def sampling(self) -> None:
        vocab = next(iter(self.models.values()))["vocab"]
        for b in self.settings["sampling_b"]:
            def make(b: int = b) -> list[Any]:
                return [self.rand(b, vocab, dtype=torch.float32)]

            record = {"op": "sampling", "batch": b, "vocab": vocab}
            self.measure(f"sampling/B={b}/argmax", "sampling", {**record, "variant": "argmax"},
                         lambda x: x.argmax(-1), make)
            self.measure(f"sampling/B={b}/sample", "sampling", {**record, "variant": "sample"},
                         _sample, make)

    def decode_step(self) -> None:
        steps = [("bf16", m, bc) for m in self.models for bc in self.settings["step"]]
        if self.fp8:  # the TP8 shard in FP8 (W8A8, per-tensor scales), as the H100 table
            steps += [("fp8", m, bc) for m in self.models if self.models[m]["tp"] > 1
                      for bc in self.settings["step_fp8"]]
        for dtype, model, (b, ctx) in steps:
            s = self.models[model]["shard"]
            layer = sum(n * k for name, (n, k) in s["gemms"].items() if name != "lm_head")
            n_head, k_head = s["gemms"]["lm_head"]
            record = {"op": "decode_step", "model": model, "dtype": dtype, "batch": b, "ctx": ctx,
                      "layers": s["layers"], "attn_variant": "cudnn" if self.cuda else "math",
                      "weight_bytes": s["layers"] * layer * (1 if dtype == "fp8" else 2)
                      + n_head * k_head * 2,  # the LM head stays BF16
                      "kv_bytes": 2 * b * ctx * s["hkv"] * s["d"] * 2 * s["layers"]}
            self.measure(f"decode_step/{dtype}/{model}/B={b}/ctx={ctx}", "decode_step", record,
                         _step_call, partial(self._step_state, s, b, ctx, dtype))

    def _step_state(self, s: dict[str, Any], b: int, ctx: int, dtype: str) -> list[dict[str, Any]]:
        g = s["gemms"]
        wdtype = torch.float8_e4m3fn if dtype == "fp8" else torch.bfloat16
        layers = [{name: self.rand(*g[name], dtype=wdtype) for name in ("qkv", "o", "gate_up", "down")}
                  | {"k": self.rand(b, s["hkv"], ctx, s["d"]), "v": self.rand(b, s["hkv"], ctx, s["d"]),
                     "norm": self.rand(s["h"])}
                  for _ in range(s["layers"])]
        return [{"x": self.rand(b, s["h"]), "layers": layers, "lm_head": self.rand(*g["lm_head"]),
                 "hq": s["hq"], "d": s["d"], "cudnn": self.cuda,
                 "one": torch.ones((), device=self.device)}]

    def collective(self) -> None:
        world = torch.cuda.device_count() if self.cuda else (2 if self.tiny else 1)
        if world < 2:
            return
        import tempfile

        import torch.multiprocessing as mp

        if self.timer.deadline - time.perf_counter() < 20.0:  # starting the ranks takes seconds
            self.skipped.append("collective")
            return
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "collective.json")
            try:
                mp.spawn(_collective_rank, args=(world, self.cuda, self.settings, out, tmp),
                         nprocs=world, join=True)
                with open(out, encoding="utf-8") as f:
                    got = json.load(f)
            except Exception as exc:  # a rank's failure arrives as ProcessRaisedException
                self.errors.append({"id": "collective", "section": "collective",
                                    "error": f"{type(exc).__name__}: {str(exc).splitlines()[-1][:300]}"})
                return
        self.results.extend(got)

    def run(self, save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Every section in turn; ``save`` gets the document so far after each one, so a
        process that dies later (a driver fault) leaves what it had measured."""
        torch.manual_seed(0)
        for name in ("ref", "gemm", "attention", "elementwise", "sampling", "decode_step",
                     "collective"):
            try:
                getattr(self, name)()
            except Exception as exc:  # one section's fault must not lose the others' timings
                self.errors.append({"id": name, "section": name,
                                    "error": f"{type(exc).__name__}: "
                                             f"{(str(exc).splitlines() or [''])[0][:300]}"})
            save(self.document())
        return self.document()

    def document(self) -> dict[str, Any]:
        env = {"torch": torch.__version__, "python": platform.python_version(),
               "device_type": self.device.type}
        device = platform.processor() or platform.machine()
        if self.cuda:
            props = torch.cuda.get_device_properties(0)
            device = props.name
            env |= {"cuda": torch.version.cuda, "capability": f"{props.major}.{props.minor}",
                    "sms": props.multi_processor_count, "memory_gb": round(props.total_memory / 1e9, 1),
                    "gpus": torch.cuda.device_count()}
        return {"schema": "opcheck/1", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "tiny": self.tiny, "device": device, "env": env,
                "elapsed_s": round(time.perf_counter() - self.start, 1),
                "settings": self.settings, "models": self.models, "results": self.results,
                "skipped": self.skipped, "errors": self.errors}


# ---------------------------------------------------------------------- the operators measured
def _sdpa(backend: Any, sdpa_kernel: Any, causal: bool = False) -> Callable[[Any], Any]:
    def call(op: Any) -> Any:
        q, k, v = op
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                  enable_gqa=k.shape[1] != q.shape[1])
    return call


def _matmul_attention(op: Any) -> Any:
    q, k, v = op
    b, hq, _, d = q.shape
    g = hq // k.shape[1]
    qg = q.view(b, k.shape[1], g, d)  # the query heads that share one KV head
    scores = torch.matmul(qg, k.transpose(-1, -2)) * d ** -0.5
    return torch.matmul(scores.softmax(-1), v)


def _rms_norm(x: Any, w: Any) -> Any:
    """One RMSNorm kernel where torch has it (F.rms_norm), else the unfused chain."""
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w


def _linear(x: Any, w: Any, one: Any = None) -> Any:
    """``x @ w.T``: BF16, or W8A8 FP8 with per-tensor scales (the activation quantised first)."""
    if w.dtype == torch.float8_e4m3fn:
        return torch._scaled_mm(x.to(torch.float8_e4m3fn), w.t(), scale_a=one, scale_b=one,
                                out_dtype=torch.bfloat16)
    return F.linear(x, w)


def _layer_elementwise(op: Any) -> Any:
    """A layer's element-wise work, unfused: two residual adds, two RMSNorms, the SwiGLU."""
    x, res, w, gu = op
    res = x + res  # attention's residual add
    y = _rms_norm(res, w)  # the MLP's input norm
    res = y + res  # the MLP's residual add
    half = gu.shape[-1] // 2
    return _rms_norm(res, w), F.silu(gu[:, :half]) * gu[:, half:]  # next norm, activation


def _sample(logits: torch.Tensor) -> torch.Tensor:
    probs = logits.softmax(-1)
    return (probs / torch.empty_like(probs).exponential_()).argmax(-1)  # exponential race


def _step_call(st: dict[str, Any]) -> Any:
    x, one = st["x"], st["one"]
    b = x.shape[0]
    hq, d = st["hq"], st["d"]
    for lay in st["layers"]:
        qkv = _linear(_rms_norm(x, lay["norm"]), lay["qkv"], one)
        q = qkv[:, : hq * d].reshape(b, hq, 1, d)
        att = _attend(q, lay["k"], lay["v"], st["cudnn"])
        x = x + _linear(att.reshape(b, hq * d), lay["o"], one)
        gu = _linear(_rms_norm(x, lay["norm"]), lay["gate_up"], one)
        half = gu.shape[-1] // 2
        x = x + _linear(F.silu(gu[:, :half]) * gu[:, half:], lay["down"], one)
    return _sample(F.linear(x, st["lm_head"]).float())


def _attend(q: Any, k: Any, v: Any, cudnn: bool) -> Any:
    """Decode attention in a step: cuDNN on a GPU (the fastest measured kernel), else default."""
    gqa = q.shape[1] != k.shape[1]
    if not cudnn:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)


def _collective_rank(rank: int, world: int, cuda: bool, settings: dict[str, Any], out: str,
                     tmp: str) -> None:
    import torch  # a spawned rank imports this file afresh: main() never ran there
    import torch.distributed as dist

    dist.init_process_group("nccl" if cuda else "gloo", init_method=f"file://{tmp}/rendezvous",
                            rank=rank, world_size=world)
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    results = []
    for nbytes in settings["collective_bytes"]:
        x = torch.ones(nbytes // 2, device=device, dtype=torch.bfloat16)
        for _ in range(3):
            dist.all_reduce(x)
        samples = []
        for _ in range(settings["reps"]):
            dist.barrier()
            if cuda:
                torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(10):
                dist.all_reduce(x)
            if cuda:
                torch.cuda.synchronize()
            samples.append((time.perf_counter() - t) * 1e3 / 10)
        med = statistics.median(samples)
        results.append({"op": "all_reduce", "world": world, "bytes": nbytes, "median_ms": med,
                        "spread": (max(samples) - min(samples)) / med, "reps": len(samples),
                        "graph": False, "id": f"collective/all_reduce/world={world}/bytes={nbytes}",
                        "section": "collective"})
    if rank == 0:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(results, f)
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="opmeasure.py",
                                description="Measure this GPU's operator table (PyTorch).")
    p.add_argument("--out", required=True, help="where to write the measurements (JSON)")
    p.add_argument("--tiny", action="store_true", help="a tiny model on the CPU, in seconds")
    p.add_argument("--budget-s", type=float, default=240.0, help="stop measuring after this")
    args = p.parse_args(argv)
    global torch, F
    import torch
    import torch.nn.functional as F

    if not args.tiny and not torch.cuda.is_available():
        print("no CUDA GPU visible to torch: the full table needs one (--tiny measures a tiny "
              "model on the CPU)", file=sys.stderr)
        return 3
    if args.tiny:
        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    def save(doc: dict[str, Any]) -> None:
        tmp = f"{args.out}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, args.out)  # whole or not at all

    doc = Profiler(args.tiny, args.budget_s).run(save)
    print(f"measured {len(doc['results'])} operators in {doc['elapsed_s']} s on {doc['device']} "
          f"({len(doc['skipped'])} skipped, {len(doc['errors'])} refused)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
