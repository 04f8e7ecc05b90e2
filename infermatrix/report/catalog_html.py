"""catalog.html: the catalog page every report writes beside its dashboard.

Every serving configuration with the exact launch command of each process, its config files
and (when the commands layer hands them in) the benchmark commands — the same data as
docs/catalog.md (``catalog_page.catalog_data``), as HTML with one anchor per recipe id, so the
dashboard's "catalog entry" links (``catalog.html#<recipe-id>``) land on it. Recipes that the
results name but the catalog no longer holds get an entry of their own saying so: no link from
a report's pages is dead.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..results.export import write_text_atomic
from .catalog_page import ROLE_NAMES, gpu_list, shell_block, wrap
from .page import page_html

PAGE = "catalog.html"
INTRO = (
    "Every serving configuration with the full launch command of each process and every config "
    "file it reads, rendered from the recipe. ${NAME} is a placeholder to bind before launch: "
    "MODEL, PORT and CONC at run time, NODE_i = the i-th node of the allocation; the rest are "
    "recipe parameters."
)


def _e(text: object) -> str:
    return html.escape(str(text))


def _link(url: str | None) -> str:
    """An http(s) URL as a link; anything else as text (no javascript: or data: links)."""
    if url and url.startswith(("https://", "http://")):
        return f' (<a href="{_e(url)}">{_e(url)}</a>)'
    return f" ({_e(url)})" if url else ""


def _pre(text: str) -> str:
    return f'<pre class="cmd">{_e(text)}</pre>'


def _process(p: Mapping[str, Any], shown: set[tuple[str, str]]) -> str:
    host = p.get("host") or "the node"
    where = f"GPUs {gpu_list(p['gpus'])} on {host}" if p.get("gpus") else f"on {host}"
    if p.get("mpi"):
        where = f"{p['mpi']['ntasks']} MPI ranks on {', '.join(p['mpi']['hosts'])}"
    role = str(p.get("role", ""))
    head = f"<b>{_e(p.get('name', ''))}</b> — {_e(ROLE_NAMES.get(role, role))}, {_e(where)}"
    if p.get("port") is not None:
        head += f", port {_e(p['port'])}"
    block = shell_block({"placeholders": [], "env": {}, **p})
    out = [f'<div class="proc" data-role="{_e(role)}">{head}', _pre(block)]
    if p.get("docker"):
        out += ['<div class="muted">In a container:</div>', _pre(wrap(p["docker"]))]
    for name, text in (p.get("files") or {}).items():
        if (name, text) in shown:
            out.append(f"<div><code>{_e(name)}</code>: as above.</div>")
            continue
        shown.add((name, text))
        out += [f"<div><code>{_e(name)}</code>:</div>", _pre(text.rstrip("\n"))]
    return "".join(out) + "</div>"


def _benchmark(b: Mapping[str, Any]) -> str:
    levels = ", ".join(map(str, b["concurrency"]))
    sweeps = ", ".join(b["sweeps"])
    return (f'<div class="bench"><b>Benchmark</b> — workload {_e(b["workload"])} at concurrency '
            f'{_e(levels)} (sweep {_e(sweeps)}):{_pre(chr(10).join(map(wrap, b["ours"])))}</div>')


def _facts(e: Mapping[str, Any]) -> str:
    door = e.get("front_door") or {}
    rows = [("system", e.get("system")),
            ("engine", " ".join(str(e[k]) for k in ("engine", "engine_version") if e.get(k))),
            ("mode", e.get("mode")), ("parallelism", e.get("parallelism")),
            ("precision", e.get("precision")), ("GPUs used", e.get("gpus_used")),
            ("weights", e.get("checkpoint")),
            ("image", e.get("image") or ("no container image published" if "image" in e else "")),
            ("front door", f"{door['host']}:{door['port']}" if door else ""),
            ("submitted by", e.get("submitted_by"))]
    return ('<table class="facts">' + "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>"
                                               for k, v in rows if v) + "</table>")


def _entry(e: Mapping[str, Any]) -> str:
    src = e.get("source") or {}
    source = f'<p class="muted">Source: {_e(src.get("document", ""))}{_link(src.get("url"))}.</p>'
    notes = f'<p class="note">{_e(src["notes"])}</p>' if src.get("notes") else ""
    params = "".join(f"<li><code>{_e(k)}</code> = <code>{_e(v)}</code> (default)</li>"
                     for k, v in e.get("params", {}).items())
    params = f"<p>Parameters:</p><ul>{params}</ul>" if params else ""
    shown: set[tuple[str, str]] = set()
    procs = "".join(_process(p, shown) for p in e["processes"])
    benches = "".join(_benchmark(b) for b in e.get("benchmarks", []))
    return (f'<section class="entry" id="{_e(e["id"])}"><h3><a href="#{_e(e["id"])}">'
            f'{_e(e["id"])}</a></h3>{_facts(e)}{source}{notes}{params}'
            f'<h4>Launch commands</h4>{procs}{benches}</section>')


def _missing(ids: Iterable[str]) -> str:
    items = "".join(f'<section class="entry gone" id="{_e(rid)}"><h3>{_e(rid)}</h3>'
                    '<p class="muted">Named by these results, but not in the catalog this report '
                    "was built from (a recipe since renamed or removed): its launch commands are "
                    "in the git history of benchmarks/ at the run's commit."
                    "</p></section>" for rid in sorted(ids))
    return f'<h2 id="not-in-catalog">Not in this catalog</h2>{items}' if items else ""


def _name(model: Mapping[str, Any]) -> str:
    return str(model.get("display_name") or model["model"])


def render(data: Mapping[str, Any], recipes: Iterable[str] = (), *, title: str,
           nav: Mapping[str, str] | None = None) -> str:
    """The page for ``catalog_data``'s ``data``; ``recipes``: the ids the report's results name
    (those the catalog lacks get an entry saying so); ``nav``: label → page linked in the header."""
    known = {e["id"] for m in data["models"] for e in m["configurations"]}
    toc = "".join(f'<li><a href="#model-{_e(m["model"])}">{_e(_name(m))}</a> '
                  f'({len(m["configurations"])})</li>' for m in data["models"])
    models = "".join(f'<section class="group" id="model-{_e(m["model"])}"><h2>'
                     f'{_e(_name(m))}</h2>' + "".join(map(_entry, m["configurations"]))
                     + "</section>" for m in data["models"])
    body = (f'<p class="muted note">{_e(INTRO)}</p><ul class="toc">{toc}</ul>{models}'
            f"{_missing(set(recipes) - known)}")
    meta = f"{len(known):,} configurations"
    return page_html(title=title, meta=meta, body=body, nav=nav)


def write_catalog_page(data: Mapping[str, Any], path: Path, recipes: Iterable[str] = (), *,
                       title: str = "infermatrix · catalog",
                       nav: Mapping[str, str] | None = None) -> Path:
    return write_text_atomic(Path(path), render(data, recipes, title=title, nav=nav))
