"""The catalog page: every serving configuration with its full commands and config files,
grouped by model — the AA configuration page, generated from our recipes.

``catalog_data`` is the JSON form (the dashboard reads it); ``render_markdown`` turns the same
data into docs/catalog.md. Both are deterministic (no timestamps) so ``--check`` can diff them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..catalog.loader import Catalog
from ..catalog.schema import Recipe
from ..engines import Deployment, Process, docker_argv, export_lines, join, render, srun_argv
from ..markup import md_text

SCHEMA_VERSION = 1
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
ROLE_NAMES = {"both": "server", "prefill": "prefill (context) worker",
              "decode": "decode (generation) worker", "router": "router"}
RUN_TIME = {"MODEL": "weights to serve (HF id or path)", "PORT": "the front door's port",
            "CONC": "the benchmark concurrency (the server restarts per level)",
            "HOST": "bind address"}


def parallelism(recipe: Recipe) -> str:
    parts = []
    for pool in recipe.topology.pools:
        p = pool.parallel
        bits = [f"TP{p.tp}"]
        bits += [f"PP{p.pp}"] if p.pp > 1 else []
        bits += [f"attention-DP{p.dp}" if p.attention_dp else f"DP{p.dp}"] if p.dp > 1 else []
        bits += [f"EP{p.ep}"] if p.ep > 1 else []
        bits += [f"CP{p.cp}"] if p.cp > 1 else []
        shape = " ".join(bits)
        if recipe.topology.mode == "aggregated" and len(recipe.topology.pools) == 1 and pool.instances == 1:
            return shape
        parts.append(f"{pool.role} {pool.instances}× {shape}")
    return "; ".join(parts)


def gpus_used(cat: Catalog, recipe: Recipe) -> str:
    hw = cat.hardware[recipe.hardware]
    used = recipe.total_gpus
    if hw.scale_up_domain > hw.gpus_per_node and used <= hw.scale_up_domain:
        return f"{used} of {hw.scale_up_domain}"
    nodes = -(-used // hw.gpus_per_node)
    return f"{used}" if nodes == 1 else f"{used} ({nodes} nodes × {hw.gpus_per_node})"


def precision(recipe: Recipe) -> str:
    text = recipe.precision.upper()
    return f"{text}, KV {recipe.kv_cache_dtype.upper()}" if recipe.kv_cache_dtype else text


def process_data(proc: Process) -> dict[str, Any]:
    return {
        "name": proc.name, "role": proc.role, "instance": proc.instance, "node_rank": proc.node_rank,
        "nnodes": proc.nnodes, "host": proc.host, "gpus": list(proc.gpus), "port": proc.port,
        "health_path": proc.health_path, "argv": list(proc.argv), "env": proc.env,
        "placeholders": sorted(proc.placeholders),
        # the line to run: srun-wrapped for a multi-node MPI worker
        "command": join(srun_argv(proc), proc.placeholders),
        "docker": join(docker_argv(proc), proc.placeholders) if proc.container else None,
        "mpi": None if proc.mpi is None else {"ntasks": proc.mpi.ntasks, "hosts": list(proc.mpi.hosts),
                                              "ntasks_per_node": proc.mpi.ntasks_per_node},
        "files": proc.files,
    }


# recipe id, its deployment -> the benchmark commands of its sweeps (launch/bench_commands.py,
# handed in by the commands layer: report knows no client)
Benchmarks = Callable[[str, Deployment], list[dict[str, Any]]]


def entry_data(cat: Catalog, rid: str, recipe: Recipe, dep: Deployment,
               benchmarks: Benchmarks | None = None) -> dict[str, Any]:
    hw = cat.hardware[recipe.hardware]
    return {
        "id": rid, "model": recipe.model, "checkpoint": cat.checkpoint(rid),
        "hardware": recipe.hardware, "system": hw.display_name,
        "engine": ENGINE_NAMES[recipe.engine.name], "engine_version": recipe.engine.version,
        "image": recipe.engine.image, "mode": recipe.topology.mode,
        "parallelism": parallelism(recipe), "precision": precision(recipe),
        "gpus": recipe.total_gpus, "gpus_used": gpus_used(cat, recipe),
        "router": recipe.router.name if recipe.router else None,
        "submitted_by": recipe.source.submitted_by, "source": recipe.source.model_dump(),
        "tags": recipe.tags, "params": {k: str(v) for k, v in recipe.params.items()},
        "placeholders": sorted(dep.unbound),
        "front_door": {"host": dep.front_door.host, "port": dep.front_door.port,
                       "path": dep.front_door.path},
        "canary": {"path": dep.canary.path, "body": dep.canary.body},
        "processes": [process_data(p) for p in dep.processes],
        "benchmarks": benchmarks(rid, dep) if benchmarks else [],
    }


def catalog_data(cat: Catalog, benchmarks: Benchmarks | None = None) -> dict[str, Any]:
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rid in sorted(cat.recipes):
        recipe = cat.recipes[rid]
        by_model[recipe.model].append(entry_data(cat, rid, recipe, render(cat, rid), benchmarks))
    models = [{"model": m, "display_name": cat.models[m].display_name, "configurations": entries}
              for m, entries in sorted(by_model.items())]
    return {"schema_version": SCHEMA_VERSION, "generated_by": "infermatrix catalog",
            "count": sum(len(m["configurations"]) for m in models), "models": models}


# --------------------------------------------------------------------------- markdown


def wrap(command: str) -> str:
    """One flag per line with backslash continuations, as the published commands read."""
    out: list[str] = []
    words = command.split(" ")
    for word in words:
        # an option starts a line, except `python3 -m module` which reads as one unit
        if out and _is_option(word) and word != "-m" and len(command) > 100:
            out.append(" \\\n    " + word)
        else:
            out.append((" " if out else "") + word)
    return "".join(out)


def _is_option(word: str) -> bool:
    return len(word) > 1 and word[0] == "-" and not word[1].isdigit()  # "-1" is a value


def gpu_list(gpus: list[int]) -> str:
    """0,1,2,3 -> 0-3 (contiguous runs collapsed)."""
    runs: list[list[int]] = []
    for g in gpus:
        if runs and g == runs[-1][-1] + 1:
            runs[-1].append(g)
        else:
            runs.append([g])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)


def shell_block(proc: dict[str, Any]) -> str:
    """The process as a paste-able bash block: exports, then the command."""
    names = set(proc["placeholders"])
    return "\n".join([*export_lines(proc["env"], names), wrap(proc["command"])])


def _process_section(p: dict[str, Any], shown_files: set[tuple[str, str]]) -> list[str]:
    where = f"GPUs {gpu_list(p['gpus'])} on `{p['host']}`" if p["gpus"] else f"on `{p['host']}`"
    if p["mpi"]:
        where = f"{p['mpi']['ntasks']} MPI ranks on {', '.join(f'`{h}`' for h in p['mpi']['hosts'])}"
    head = f"**{p['name']}** — {ROLE_NAMES[p['role']]}, {where}"
    if p["port"] is not None:
        head += f", port `{p['port']}`"
    out = [head, "", "```bash", shell_block(p), "```", ""]
    if p["docker"]:
        out += ["In a container:", "", "```bash", wrap(p["docker"]), "```", ""]
    for name, text in p["files"].items():
        if (name, text) in shown_files:
            out += [f"`{name}`: as above.", ""]
            continue
        shown_files.add((name, text))
        out += [f"`{name}`:", "", "```yaml", text.rstrip("\n"), "```", ""]
    return out


def _entry_section(e: dict[str, Any]) -> list[str]:
    src = e["source"]
    out = [f"### `{e['id']}`", ""]
    out += ["| System | Engine | Parallelism | Precision | GPUs used | Submitted by |",
            "|---|---|---|---|---|---|",
            f"| {e['system']} | {e['engine']} ({e['engine_version']}) | {e['parallelism']} | "
            f"{e['precision']} | {e['gpus_used']} | {md_text(e['submitted_by'])} |", ""]
    line = f"Source: {md_text(src['document'])}"
    line += f" ({src['url']})" if src.get("url") else ""
    out += [line + ".", ""]
    if src.get("notes"):  # the recipe author's free text: shown as text, never as markup
        out += [md_text(src["notes"]), ""]
    facts = [f"weights `{e['checkpoint']}`"]
    facts += [f"image `{e['image']}`"] if e["image"] else ["no container image published"]
    facts += [f"front door `{e['front_door']['host']}:{e['front_door']['port']}`"]
    text = "; ".join(facts)
    out += [text[0].upper() + text[1:] + ".", ""]
    if e["params"] or e["placeholders"]:
        out += ["Parameters:", ""]
        out += [f"- `{k}` = `{v}` (default)" for k, v in e["params"].items()]
        nodes = sorted((n for n in e["placeholders"] if n.startswith("NODE_")), key=lambda n: int(n[5:]))
        out += [f"- `{n}`: {_meaning(n)}" for n in e["placeholders"] if n not in nodes]
        if nodes:
            if len(nodes) == 1:
                out.append(f"- `{nodes[0]}`: the node's address")
            else:
                out.append(f"- `{nodes[0]}` … `{nodes[-1]}`: the allocation's node addresses, in order")
        out.append("")
    shown: set[tuple[str, str]] = set()
    for p in e["processes"]:
        out += _process_section(p, shown)
    for b in e.get("benchmarks", []):
        out += _benchmark_section(b)
    return out


SEED_CLIENTS = {"sglang.bench_serving": "SGLang's bench_serving, as the source ran it",
                "benchmark_serving.py": "InferenceMAX's benchmark_serving.py, as its README runs it"}


def _benchmark_section(b: dict[str, Any]) -> list[str]:
    sweeps = ", ".join(f"`{s}`" for s in b["sweeps"])
    levels = ", ".join(map(str, b["concurrency"]))
    out = [f"**Benchmark** — workload `{b['workload']}` at concurrency {levels} "
           f"(sweep {sweeps}):", "", "```bash", *map(wrap, b["ours"]), "```", ""]
    if b["seed"]:
        out += [f"With {SEED_CLIENTS[b['seed_client']]}:", "", "```bash", *map(wrap, b["seed"]),
                "```", ""]
    return out


def render_markdown(data: dict[str, Any]) -> str:
    out = [
        "# Serving configurations",
        "",
        "<!-- Generated by `infermatrix catalog` from benchmarks/; do not edit by hand. -->",
        "",
        "Every serving configuration in the catalog with the full launch command of each process "
        "and every config file it reads, rendered by `infermatrix.engines` from the recipe. "
        "`${NAME}` is a placeholder to bind before launch: `MODEL`, `PORT` and `CONC` at run time, "
        "`NODE_i` = the i-th node of the allocation (SLURM_JOB_NODELIST order); the rest are "
        "recipe parameters. Config files are written to the working directory. Under each "
        "configuration, **Benchmark** gives the client command of every workload its sweeps run "
        "(`infermatrix bench` exactly as `infermatrix run` measures each level, a loop over "
        "`CONC`), and the source's own client command where it publishes one.",
        "",
        f"Showing {_plural(data['count'], 'configuration')}",
        "",
    ]
    for m in data["models"]:
        out += [f"- [{m['display_name']}](#{_anchor(m['display_name'])}): "
                f"{_plural(len(m['configurations']), 'configuration')}"]
    out.append("")
    for m in data["models"]:
        out += [f"## {m['display_name']}", "", _plural(len(m["configurations"]), "configuration"), ""]
        for e in m["configurations"]:
            out += _entry_section(e)
    return "\n".join(out).rstrip("\n") + "\n"


def _meaning(name: str) -> str:
    if name in RUN_TIME:
        return RUN_TIME[name]
    return "set before launch (see the source notes)"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _anchor(title: str) -> str:
    return "".join(c for c in title.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def build(cat: Catalog, benchmarks: Benchmarks | None = None) -> tuple[dict[str, Any], str]:
    """(JSON data, markdown page)."""
    data = catalog_data(cat, benchmarks)
    return data, render_markdown(data)
