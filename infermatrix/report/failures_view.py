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
from .dashboard_assets import asset

FIELDS = ("run_id", "job_id", "recipe", "model", "hardware", "engine", "workload", "runner",
          "stage", "reason", "log_tail", "simulated", "launcher", "failed_at")

STYLE = asset("failures.css")  # the section's own style and script (report/assets/)
SCRIPT = asset("failures.js")


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
