"""What a level of a workload runs (``workload_config``: the client settings `infermatrix run`
measures it with), and how each recipe is benchmarked as commands a reader can paste, for
docs/catalog.md: ours (`infermatrix bench`
with the settings `infermatrix run` uses for every level of the sweep's workload) and, where
the source document gives one, its own client's command (SGLang's bench_serving, InferenceMAX's
benchmark_serving.py), both rendered from the same workload and concurrencies.

Levels are a shell loop over ``CONC``; numbers that scale with it are shell arithmetic, e.g.
``--num-prompts $(( CONC * 10 ))``. tests/launch/test_bench_commands.py evaluates each level and
checks it parses to exactly the configuration `infermatrix run` measures. The commands
layer hands ``recipe_benchmarks`` to the catalog page (report knows no client).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..catalog.loader import Catalog
from ..catalog.schema import Workload
from ..catalog.validate import entry_recipes
from ..client import BenchConfig
from ..client.backends import backend_for
from ..client.cli import config_argv
from ..engines import Deployment, quote, served_model

CONC = "$CONC"


def workload_config(wl: Workload, conc: int, base_url: str | None = None,
                    model: str | None = None, tokenizer: str | None = None) -> BenchConfig:
    """A client ``BenchConfig`` for ``wl`` at concurrency ``conc`` (tokenizer None: the model's)."""
    return BenchConfig(
        backend=backend_for(wl.endpoint),
        base_url=base_url, model=model, tokenizer=tokenizer,
        dataset_name="random", random_input_len=wl.isl, random_output_len=wl.osl,
        # workloads draw lengths in [range_ratio × L, L] (InferenceMAX's benchmark_serving.py)
        random_range_ratio=wl.range_ratio, range_ratio_style="sglang",
        num_prompts=wl.num_prompts(conc),
        num_warmups=wl.num_warmups(conc), max_concurrency=conc, ignore_eos=wl.ignore_eos,
        max_error_rate=wl.max_error_rate, seed=conc, disable_tqdm=True,
        percentile_metrics=["ttft", "tpot", "itl", "e2el"], metric_percentiles=[50, 90, 99],
    )


def per_conc(factor: float, minimum: int = 0) -> str | None:
    """Shell arithmetic for ``max(minimum, factor × CONC)``; None unless factor is whole."""
    if factor != int(factor):
        return None
    f = int(factor)
    term = "CONC" if f == 1 else f"CONC * {f}"
    if minimum > f:  # the minimum binds at small concurrencies
        return f"$(( {term} > {minimum} ? {term} : {minimum} ))"
    return "$CONC" if f == 1 else f"$(( {term} ))"


def _loop(concurrency: Sequence[int], lines: list[str]) -> list[str]:
    return [f"for CONC in {' '.join(map(str, concurrency))}; do", *lines, "done"]


def _front(dep: Deployment) -> tuple[str, str]:
    return dep.front_door.host, str(dep.front_door.port)


def _model(cat: Catalog, rid: str, dep: Deployment) -> str:
    worker = next(p for p in dep.processes if p.role != "router")
    bind = {"MODEL": "${MODEL}"} if "MODEL" in dep.unbound else {}
    return served_model(cat, cat.recipes[rid], worker, bind)


def ours(cat: Catalog, rid: str, dep: Deployment, wl: Workload,
         concurrency: Sequence[int]) -> list[str]:
    """`infermatrix bench` over the levels (one literal command per level where a count does
    not scale by a whole factor)."""
    host, port = _front(dep)
    base_url, model = f"http://{host}:{port}", _model(cat, rid, dep)
    names = set(dep.unbound)

    def command(conc: int, symbolic: dict[str, str]) -> str:
        argv = config_argv(workload_config(wl, conc, base_url, model))
        words = ["infermatrix", "bench"]
        for i, tok in enumerate(argv):
            raw = symbolic.get(argv[i - 1]) if i else None
            words.append(raw if raw is not None else quote(tok, names))
        return " ".join(words)

    prompts = per_conc(wl.prompts_per_concurrency, wl.min_prompts)
    warmups = per_conc(wl.warmups_per_concurrency)
    if prompts is None or warmups is None:
        return [command(c, {}) for c in concurrency]
    symbolic = {"--max-concurrency": CONC, "--seed": CONC, "--num-prompts": prompts,
                "--num-warmups": warmups}
    return _loop(concurrency, [command(concurrency[0], symbolic)])


def sglang_bench_serving(dep: Deployment, wl: Workload, concurrency: Sequence[int]) -> list[str]:
    """``python -m sglang.bench_serving`` as the Ascend seed runs it, one command per level."""
    host, port = _front(dep)
    names = set(dep.unbound)
    return [" ".join([
        "python -m sglang.bench_serving --dataset-name random --backend sglang",
        f"--host {quote(host, names)} --port {quote(port, names)} --max-concurrency {c}",
        f"--random-input-len {wl.isl} --random-output-len {wl.osl}",
        f"--num-prompts {wl.num_prompts(c)} --random-range-ratio {wl.range_ratio:g}",
    ]) for c in concurrency]


def inferencemax_benchmark_serving(wl: Workload, concurrency: Sequence[int]) -> list[str] | None:
    """InferenceMAX's README command, its shell variables set from the workload."""
    if per_conc(wl.prompts_per_concurrency, wl.min_prompts) != per_conc(wl.prompts_per_concurrency):
        return None
    command = " ".join([
        "python3 bench_serving/benchmark_serving.py --model $MODEL --backend vllm",
        "--base-url http://0.0.0.0:$PORT --dataset-name random",
        "--random-input-len $ISL --random-output-len $OSL --random-range-ratio $RANDOM_RANGE_RATIO",
        f"--num-prompts $(( $CONC * {int(wl.prompts_per_concurrency)} )) --max-concurrency $CONC",
        "--request-rate inf --ignore-eos --save-result --percentile-metrics 'ttft,tpot,itl,e2el'",
    ])
    shape = f"ISL={wl.isl} OSL={wl.osl} RANDOM_RANGE_RATIO={wl.range_ratio:g}"
    return [shape, *_loop(concurrency, [command])]


def seed_form(client: str | None, dep: Deployment, wl: Workload,
              concurrency: Sequence[int]) -> list[str] | None:
    if client == "sglang.bench_serving":
        return sglang_bench_serving(dep, wl, concurrency)
    if client == "benchmark_serving.py":
        return inferencemax_benchmark_serving(wl, concurrency)
    return None


def recipe_benchmarks(cat: Catalog, rid: str, dep: Deployment) -> list[dict[str, Any]]:
    """Every (workload, concurrencies) the sweeps run ``rid`` at, with both command forms."""
    found: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = {}
    for sweep_name in sorted(cat.sweeps):
        for entry in cat.sweeps[sweep_name].entries:
            if rid not in entry_recipes(cat, entry):
                continue
            for name in entry.workloads:
                wl = cat.workloads[name]
                if wl.kind != "fixed":  # agentic workloads are capacity searches
                    continue
                key = (name, tuple(entry.concurrency))
                item = found.setdefault(key, {
                    "workload": name, "concurrency": list(entry.concurrency), "sweeps": [],
                    "ours": ours(cat, rid, dep, wl, entry.concurrency), "seed": None,
                    "seed_client": None})
                item["sweeps"].append(sweep_name)
                seed = seed_form(entry.seed_client, dep, wl, entry.concurrency)
                if seed is not None:
                    item["seed"], item["seed_client"] = seed, entry.seed_client
    return list(found.values())
