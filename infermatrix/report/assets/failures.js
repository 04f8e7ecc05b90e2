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
