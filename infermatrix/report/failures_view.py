"""The dashboard's "Failed jobs" list: a self-contained section (its own data element, style and
script), so a fleet that broke overnight shows as broken rather than as "no points".

The data is ``{"failures": [...]}`` in ``<script id="imx-failures" type="application/json">``;
the list has its own filters (run, stage, hardware, engine, text) and shows each job's reason,
with the server's log tail one click away.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..results.failures import JobFailure

FIELDS = ("run_id", "job_id", "recipe", "model", "hardware", "engine", "workload", "runner",
          "stage", "reason", "log_tail", "simulated", "launcher", "failed_at")

STYLE = r"""
#failed { border:1px solid var(--bad, #cf222e); border-radius:6px; margin:.8rem 1rem 0; padding:.2rem .8rem .6rem; }
#failed h2 { color:var(--bad, #cf222e); }
#failed .controls { display:flex; flex-wrap:wrap; gap:.6rem 1rem; align-items:end; }
#failed td.reason { white-space:normal; min-width:24rem; }
#failed pre { white-space:pre-wrap; word-break:break-all; font-size:.75rem; margin:.2rem 0; }
"""

SCRIPT = r"""
(function () {
"use strict";
const el = document.getElementById("imx-failures");
const FAILS = el ? (JSON.parse(el.textContent).failures || []) : [];
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const FILTERS = ["run_id", "stage", "hardware", "engine"];
FILTERS.forEach((k) => {
  const sel = $("ff-" + k), values = [...new Set(FAILS.map((f) => f[k]).filter((v) => v))].sort();
  sel.innerHTML = '<option value="">all</option>' + values.map((v) => `<option>${esc(v)}</option>`).join("");
  sel.addEventListener("change", draw);
});
$("ff-text").addEventListener("input", draw);
function draw() {
  const text = $("ff-text").value.trim().toLowerCase();
  const shown = FAILS.filter((f) => FILTERS.every((k) => !$("ff-" + k).value || f[k] === $("ff-" + k).value)
    && (!text || [f.job_id, f.recipe, f.workload, f.runner, f.reason].join(" ").toLowerCase().includes(text)));
  $("ff-count").textContent = `${shown.length} of ${FAILS.length} failed jobs`;
  $("failed-list").innerHTML = "<thead><tr><th>run</th><th>recipe</th><th>workload</th><th>runner</th><th>stage</th><th>reason</th></tr></thead><tbody>"
    + shown.map((f) => `<tr><td>${esc(f.run_id)}</td><td>${esc(f.recipe)}${f.simulated ? ' <span class="badge sim">sim</span>' : ""}</td>`
      + `<td>${esc(f.workload)}</td><td>${esc(f.runner)}</td><td>${esc(f.stage)}</td>`
      + `<td class="reason">${esc(f.reason)}${f.log_tail ? `<details><summary>log tail</summary><pre>${esc(f.log_tail)}</pre></details>` : ""}</td></tr>`).join("")
    + "</tbody>";
}
draw();
})();
"""


def encode_failures(failures: Sequence[JobFailure]) -> list[dict[str, Any]]:
    return [f.model_dump(include=set(FIELDS)) for f in failures]


def failed_section(failures: Sequence[dict[str, Any]]) -> str:
    """The section's HTML (with its data, style and script) for encoded failures; empty when
    nothing failed."""
    if not failures:
        return ""
    # "<" only occurs inside JSON strings, where \u003c means the same: nothing ends the element
    blob = json.dumps({"failures": list(failures)}, separators=(",", ":"),
                      allow_nan=False).replace("<", "\\u003c")
    selects = "".join(f'<label>{label}<select id="ff-{key}"></select></label>' for key, label in
                      (("run_id", "run"), ("stage", "stage"), ("hardware", "hardware"),
                       ("engine", "engine")))
    return f"""
<section id="failed">
  <h2>Failed jobs ({len(failures):,}): broke before or during their levels</h2>
  <div class="controls">{selects}<label>search<input id="ff-text" placeholder="recipe, runner, reason"></label>
    <span id="ff-count" class="muted"></span></div>
  <div class="scroll"><table class="data" id="failed-list"></table></div>
</section>
<style>{STYLE}</style>
<script id="imx-failures" type="application/json">{blob}</script>
<script>{SCRIPT}</script>"""
