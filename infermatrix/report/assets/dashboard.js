(function () {
const DATA = JSON.parse(document.getElementById("imx-data").textContent);
const $ = (id) => document.getElementById(id);
const FILTERS = ["model", "workload", "hardware", "engine", "precision"];
const AX = DATA.axes;  // metric -> {label, higher, scale}
const PALETTE = DATA.palette, SHAPES = ["o", "s", "^", "D", "v", "P", "X", "*"];

// ---------------------------------------------------------------- the levels, in chunks
// One chunk of columnar levels per run (dashboard.py chunks): inline in DATA, or a script file
// that calls imx_chunk when a view first needs its run. `rows` holds the levels loaded so far.
const N = DATA.count, CH = DATA.chunks, rows = [], TRENDS = {};
const chunkState = new Map();  // "run:3" -> promise while loading, true once loaded
function decode(body) {
  const n = body.count, start = rows.length;
  for (let i = 0; i < n; i++) rows.push({ i: start + i });
  for (const [name, col] of Object.entries(body.columns)) {
    if (col.dict) { const d = col.dict, c = col.codes; for (let i = 0; i < n; i++) rows[start + i][name] = c[i] < 0 ? null : d[c[i]]; }
    else { const v = col.values; for (let i = 0; i < n; i++) rows[start + i][name] = v[i]; }
  }
  for (let i = start; i < rows.length; i++) { const r = rows[i]; r.simulated = !!r.simulated; r.source = r.simulated ? "simulated" : "measured"; }
}
function take(kind, i, body) {
  if (chunkState.get(kind + ":" + i) === true) return;
  if (kind === "run") decode(body); else TRENDS[CH.trends[i].key] = body;
  chunkState.set(kind + ":" + i, true);
}
window.imx_chunk = take;
for (const [i, body] of Object.entries(CH.inline.runs)) take("run", Number(i), body);
for (const [i, body] of Object.entries(CH.inline.trends)) take("trend", Number(i), body);
function loadChunk(kind, i) {  // a promise, settled once the chunk's script has run
  const id = kind + ":" + i, st = chunkState.get(id);
  if (st === true) return Promise.resolve();
  if (st) return st;
  const file = (kind === "run" ? CH.runs : CH.trends)[i].file;
  const p = new Promise((resolve, reject) => { const el = document.createElement("script"); el.src = file;
    el.onload = () => { if (chunkState.get(id) === true) resolve(); else reject(new Error(file + ": no data")); };
    el.onerror = () => reject(new Error("cannot load " + file)); document.head.appendChild(el); });
  chunkState.set(id, p); p.catch(() => chunkState.delete(id));
  return p;
}
const SIMRUNS = new Set(DATA.simulated_runs || []);
function badgeSimulatedRuns(sel) {  // a run with simulated levels says so in the run selector
  for (const o of sel.options) if (SIMRUNS.has(o.value)) { o.textContent = o.value + " · simulated"; o.dataset.simulated = "1"; }
}
const runs = DATA.runs;  // oldest first
const uniq = (k) => DATA.vocab[k].filter((v) => v !== null);  // every run's values, loaded or not
// fixed per name (report/style.py), whatever else the page holds
const hwColour = DATA.hw_colours, engShape = DATA.engine_markers, DASHES = DATA.dashes;
// a configuration: one series (frontier line); its dashes tell configurations of one hardware ×
// engine apart (recipe × parallelism), hollow markers mark disaggregated ones
const seriesKey = (r) => [r.hardware, r.engine, r.recipe, r.topology].join("\u0000");
const seriesLabel = (r) => (r.model && r.recipe.startsWith(r.model + "/") ? r.recipe.slice(r.model.length + 1) : r.recipe) + (r.topology ? " · " + r.topology : "");

const state = { view: "chart", run: runs.length ? runs[runs.length - 1] : "__all__", failed: false,
  y: "output_tput_per_gpu", x: "interactivity", logx: false, logy: false, series: true, page: 0,
  sort: { key: "output_tput_per_gpu", dir: -1 }, pinned: null, f: {} };
FILTERS.forEach((k) => { state.f[k] = "__all__"; });
// A frontier compares like with like: open on the latest run's most measured model, then its
// most measured workload (dashboard.py start_view).
if (DATA.start.model !== null) state.f.model = DATA.start.model;
if (DATA.start.workload !== null) state.f.workload = DATA.start.workload;

// ---------------------------------------------------------------- helpers
const fmt = (v, d) => v === null || v === undefined || Number.isNaN(v) ? "–"
  : Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en-US")
  : v.toLocaleString("en-US", { maximumFractionDigits: d === undefined ? (Math.abs(v) < 10 ? 2 : 1) : d });
const esc = (s) => String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const val = (r, m) => { const v = r[m]; return v === null || v === undefined ? null : v * (AX[m] ? AX[m].scale : 1); };
// DATA.catalog is a page (linked as page#<recipe-id>) or a template with {id} / {anchor}
// ({anchor}: the GitHub heading slug of the recipe id, as docs/catalog.md's headings get).
const slug = (id) => id.toLowerCase().replace(/ /g, "-").replace(/[^a-z0-9_-]/g, "");
const catalogHref = (r) => /\{(id|anchor)\}/.test(DATA.catalog)
  ? DATA.catalog.replace("{id}", encodeURIComponent(r.recipe)).replace("{anchor}", slug(r.recipe))
  : DATA.catalog + "#" + encodeURIComponent(r.recipe).replace(/%2F/g, "/");
function cssVar(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

function filtered(opts) {
  const o = opts || {};
  return rows.filter((r) => {
    if (!o.anyRun && state.run !== "__all__" && r.run_id !== state.run) return false;
    if (!o.anyStatus && !state.failed && r.status !== "ok") return false;
    for (const k of FILTERS) if (state.f[k] !== "__all__" && r[k] !== state.f[k]) return false;
    return true;
  });
}

function pareto(pts, xHigher, yHigher) {  // pts: [{x, y, r}], returns frontier sorted by x
  const sx = xHigher ? 1 : -1, sy = yHigher ? 1 : -1;
  const order = pts.slice().sort((a, b) => (sx * b.x - sx * a.x) || (sy * b.y - sy * a.y));
  const front = []; let best = -Infinity;
  for (const p of order) { if (sy * p.y > best) { front.push(p); best = sy * p.y; } }
  return front.sort((a, b) => a.x - b.x);
}

// ---------------------------------------------------------------- controls
function option(value, label, selected) { const o = document.createElement("option"); o.value = value; o.textContent = label; o.selected = !!selected; return o; }
function fillSelect(sel, values, current, allLabel) {
  sel.textContent = "";
  if (allLabel) sel.appendChild(option("__all__", allLabel, current === "__all__"));
  values.forEach((v) => sel.appendChild(option(v, v, v === current)));
}
function setupControls() {
  // the agentic view keeps its own selection in the same filter controls (see syncFilters)
  FILTERS.forEach((k) => { const s = $("f-" + k);
    s.addEventListener("change", () => { (state.view === "agentic" ? ag : state).f[k] = s.value; state.page = 0; render(); }); });
  const runSel = $("f-run");
  runSel.addEventListener("change", () => { if (state.view === "agentic") ag.run = runSel.value; else state.run = runSel.value; state.page = 0; render(); });
  $("f-failed").addEventListener("change", (e) => { state.failed = e.target.checked; render(); });
  const metricOpts = (sel, list, cur) => { sel.textContent = ""; list.forEach((m) => sel.appendChild(option(m, AX[m].label, m === cur))); };
  metricOpts($("c-y"), DATA.y_metrics, state.y); metricOpts($("c-x"), DATA.x_metrics, state.x);
  $("c-y").addEventListener("change", (e) => { state.y = e.target.value; autoLogY(); render(); });
  $("c-logy").addEventListener("change", (e) => { state.logy = e.target.checked; render(); });
  $("c-x").addEventListener("change", (e) => { state.x = e.target.value; render(); });
  $("c-logx").addEventListener("change", (e) => { state.logx = e.target.checked; render(); });
  $("c-series").addEventListener("change", (e) => { state.series = e.target.checked; render(); });
  $("c-best").addEventListener("change", () => renderBest(filtered()));
  document.querySelectorAll("nav button[data-view]").forEach((b) => b.addEventListener("click", () => {
    state.view = b.dataset.view; render(); }));
  const cmpBase = $("cmp-base"), cmpNew = $("cmp-new");
  fillSelect(cmpBase, runs.slice().reverse(), runs.length > 1 ? runs[runs.length - 2] : runs[0]);  // one run: renderCompare says so
  fillSelect(cmpNew, runs.slice().reverse(), runs[runs.length - 1]);
  badgeSimulatedRuns(cmpBase); badgeSimulatedRuns(cmpNew);
  [cmpBase, cmpNew].forEach((el) => el.addEventListener("change", render));  // loads the runs first
  $("cmp-z").addEventListener("change", renderCompare);
  $("t-config").addEventListener("change", (e) => { tstate.key = e.target.value; tstate.conc = "__all__"; renderTrend(); });
  $("t-conc").addEventListener("change", (e) => { tstate.conc = e.target.value; renderTrend(); });
  document.addEventListener("click", (e) => { const b = e.target.closest("[data-trend]"); if (b) openTrend(b.dataset.trend, b.dataset.conc); });
  document.addEventListener("imx-theme", render);
}

// ---------------------------------------------------------------- chart
const chart = { pts: [], grid: null, cell: 24, toX: null, toY: null };
function niceTicks(lo, hi, n) {
  const span = hi - lo || Math.abs(hi) || 1, step0 = span / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= n) || 10 * mag;
  const out = []; for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}
// cost and energy blow up at low load: log y when the values shown span more than a decade
function autoLogY() {
  const v = filtered().map((r) => val(r, state.y)).filter((x) => x !== null);
  const pos = v.filter((x) => x > 0);
  state.logy = DATA.log_metrics.indexOf(state.y) >= 0 && pos.length === v.length && pos.length > 1
    && Math.max.apply(null, pos) / Math.min.apply(null, pos) > DATA.decade;
  $("c-logy").checked = state.logy;
}
function drawShape(ctx, shape, x, y, s, hollow) {
  ctx.beginPath();
  if (shape === "s") ctx.rect(x - s, y - s, 2 * s, 2 * s);
  else if (shape === "^") { ctx.moveTo(x, y - s * 1.2); ctx.lineTo(x + s * 1.1, y + s * 0.9); ctx.lineTo(x - s * 1.1, y + s * 0.9); ctx.closePath(); }
  else if (shape === "v") { ctx.moveTo(x, y + s * 1.2); ctx.lineTo(x + s * 1.1, y - s * 0.9); ctx.lineTo(x - s * 1.1, y - s * 0.9); ctx.closePath(); }
  else if (shape === "D") { ctx.moveTo(x, y - s * 1.3); ctx.lineTo(x + s * 1.1, y); ctx.lineTo(x, y + s * 1.3); ctx.lineTo(x - s * 1.1, y); ctx.closePath(); }
  else ctx.arc(x, y, s, 0, 2 * Math.PI);
  if (hollow) { ctx.strokeStyle = ctx.fillStyle; ctx.lineWidth = 1.2; ctx.stroke(); } else ctx.fill();
}
function renderChart(data) {
  const canvas = $("chart"), wrap = $("chart-wrap"), dpr = window.devicePixelRatio || 1;
  const W = wrap.clientWidth, H = wrap.clientHeight;
  canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
  const ctx = canvas.getContext("2d"); ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const fg = cssVar("--fg"), muted = cssVar("--muted"), gridc = cssVar("--grid");
  ctx.fillStyle = cssVar("--bg"); ctx.fillRect(0, 0, W, H);
  const logx = state.logx, logy = state.logy;
  const pts = [];
  for (const r of data) {
    const x = val(r, state.x), y = val(r, state.y);
    if (x === null || y === null || (logx && x <= 0) || (logy && y <= 0)) continue;
    pts.push({ x: x, y: y, r: r });
  }
  chart.pts = pts;
  canvas.dataset.points = String(pts.length);
  $("count").textContent = pts.length.toLocaleString("en-US") + " points";
  const m = { l: 70, r: 16, t: 14, b: 46 }, pw = W - m.l - m.r, ph = H - m.t - m.b;
  if (!pts.length) { ctx.fillStyle = muted; ctx.font = "14px system-ui"; ctx.fillText("No points match the filters.", m.l + 10, m.t + 30); chart.grid = null; renderLegend(null, {}); perGpuNote([]); return; }
  const tx = (v) => logx ? Math.log10(v) : v, ty = (v) => logy ? Math.log10(v) : v;
  let x0 = Infinity, x1 = -Infinity, y0 = logy ? Infinity : 0, y1 = -Infinity;
  for (const p of pts) { const xv = tx(p.x), yv = ty(p.y); if (xv < x0) x0 = xv; if (xv > x1) x1 = xv; if (yv > y1) y1 = yv; if (yv < y0) y0 = yv; }
  const xmin = x0, padx = (x1 - x0) * 0.04 || 1; x0 -= padx; x1 += padx;
  if (logy) { const pady = (y1 - y0) * 0.05 || 0.5; y0 -= pady; y1 += pady; } else y1 = y1 * 1.06 || 1;
  if (!logx && x0 < 0 && xmin >= 0) x0 = 0;
  const toX = (v) => m.l + (tx(v) - x0) / (x1 - x0) * pw, toY = (v) => m.t + ph - (ty(v) - y0) / (y1 - y0) * ph;
  chart.toX = toX; chart.toY = toY;
  ctx.strokeStyle = gridc; ctx.lineWidth = 1; ctx.fillStyle = muted; ctx.font = "11px system-ui";
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  const yt = logy ? niceTicks(Math.floor(y0), Math.ceil(y1), 8).filter((t) => Number.isInteger(t)).map((t) => Math.pow(10, t)) : niceTicks(y0, y1, 6);
  for (const t of yt) { const y = toY(t); if (y < m.t - 1 || y > m.t + ph + 1) continue; ctx.beginPath(); ctx.moveTo(m.l, y); ctx.lineTo(m.l + pw, y); ctx.stroke(); ctx.fillText(fmt(t), m.l - 6, y); }
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  const xt = logx ? niceTicks(Math.floor(x0), Math.ceil(x1), 8).filter((t) => Number.isInteger(t)).map((t) => Math.pow(10, t)) : niceTicks(x0, x1, 8);
  for (const t of xt) { const x = toX(t); if (x < m.l - 1 || x > m.l + pw + 1) continue; ctx.beginPath(); ctx.moveTo(x, m.t); ctx.lineTo(x, m.t + ph); ctx.stroke(); ctx.fillText(fmt(t), x, m.t + ph + 6); }
  ctx.fillStyle = fg; ctx.font = "12px system-ui";
  ctx.fillText(AX[state.x].label + (logx ? " (log)" : ""), m.l + pw / 2, H - 18);
  ctx.save(); ctx.translate(14, m.t + ph / 2); ctx.rotate(-Math.PI / 2); ctx.textBaseline = "middle"; ctx.fillText(AX[state.y].label + (logy ? " (log)" : ""), 0, 0); ctx.restore();
  // points, grouped by series so each style is set once
  const groups = new Map();
  for (const p of pts) { const k = seriesKey(p.r); if (!groups.has(k)) groups.set(k, []); groups.get(k).push(p); p.px = toX(p.x); p.py = toY(p.y); }
  const dash = seriesDashes(Array.from(groups.keys()));
  const size = pts.length > 5000 ? 2.2 : 3.6;
  const xh = AX[state.x].higher, yh = AX[state.y].higher;
  const path = (front) => { ctx.beginPath(); front.forEach((p, j) => { if (j) ctx.lineTo(p.px, p.py); else ctx.moveTo(p.px, p.py); }); ctx.stroke(); };
  // the frontier over everything shown: a wide halo under the points
  const overall = pareto(pts, xh, yh);
  ctx.lineJoin = "round"; ctx.lineCap = "round";
  ctx.strokeStyle = fg; ctx.globalAlpha = 0.22; ctx.lineWidth = 9; path(overall);
  ctx.globalAlpha = 0.9; ctx.lineWidth = 1.2; ctx.setLineDash([5, 4]); path(overall); ctx.setLineDash([]);
  ctx.globalAlpha = pts.length > 5000 ? 0.45 : 0.75;
  for (const g of groups.values()) { const r = g[0].r, hollow = r.mode === "disaggregated"; ctx.fillStyle = hwColour[r.hardware]; const sh = engShape[r.engine] || "o";
    for (const p of g) drawShape(ctx, sh, p.px, p.py, size, hollow); }
  ctx.globalAlpha = 1;
  if (state.series) for (const [k, g] of groups) { const front = pareto(g, xh, yh), r = g[0].r, c = hwColour[r.hardware], sh = engShape[r.engine] || "o";
    ctx.strokeStyle = c; ctx.lineWidth = 1.4; ctx.setLineDash(DASHES[dash[k]]); path(front); ctx.setLineDash([]); ctx.fillStyle = c;
    front.forEach((p) => drawShape(ctx, sh, p.px, p.py, size + 1, r.mode === "disaggregated")); }
  ctx.fillStyle = fg; overall.forEach((p) => drawShape(ctx, engShape[p.r.engine] || "o", p.px, p.py, size + 2.2));
  ctx.fillStyle = cssVar("--bg"); overall.forEach((p) => drawShape(ctx, "o", p.px, p.py, 1.3));
  canvas.dataset.frontier = String(overall.length);
  markSimulated(ctx, pts, m, pw, size);
  // hover grid
  const grid = new Map(), c = chart.cell;
  for (const p of pts) { const key = Math.floor(p.px / c) + "," + Math.floor(p.py / c); if (!grid.has(key)) grid.set(key, []); grid.get(key).push(p); }
  chart.grid = grid;
  renderLegend(groups, dash);
  perGpuNote(pts);
}
// configurations of one hardware × engine get the dashes in turn (report/style.py dashes)
function seriesDashes(keys) {
  const out = {}, seen = {};
  for (const k of keys.slice().sort()) { const he = k.split("\u0000").slice(0, 2).join("\u0000"); const n = seen[he] || 0; seen[he] = n + 1; out[k] = n % DASHES.length; }
  return out;
}
// disaggregated per-GPU figures divide by one pool's GPUs: say so where they are shown
function perGpuNote(pts) {
  const note = $("pergpu-note"), basis = DATA.per_gpu[state.y], dis = pts.filter((p) => p.r.mode === "disaggregated").length;
  note.hidden = !(basis && dis);
  note.textContent = note.hidden ? "" : dis.toLocaleString("en-US") + " disaggregated point" + (dis === 1 ? "" : "s") + " (hollow markers): " + basis + "; aggregated points: per GPU of the deployment.";
}
// Simulated points get a ring, the plot a stamp and the page a note saying how many there are.
function markSimulated(ctx, pts, m, pw, size) {
  const sim = pts.filter((p) => p.r.simulated), colour = cssVar("--sim"), note = $("sim-note");
  $("chart").dataset.simulated = String(sim.length);
  note.hidden = !sim.length;
  const virt = sim.filter((p) => p.r.launcher === "virtual").length;  // played on the simulator's clock, no server
  const clock = virt === sim.length ? "in virtual time" : virt === 0 ? "in real time" : "in virtual time (" + virt + ") and in real time (" + (sim.length - virt) + ")";
  const from = " from the simulated engine " + clock + ", not from hardware.";
  note.textContent = !sim.length ? "" : sim.length === pts.length ? "Simulated: every point shown comes" + from
    : "Partly simulated: " + sim.length.toLocaleString("en-US") + " of the " + pts.length.toLocaleString("en-US") + " points shown (ringed) come" + from;
  if (!sim.length) return;
  ctx.strokeStyle = colour; ctx.lineWidth = 1.2;
  for (const p of sim) { ctx.beginPath(); ctx.arc(p.px, p.py, size + 3.5, 0, 2 * Math.PI); ctx.stroke(); }
  const label = sim.length === pts.length ? "SIMULATED" : "PARTLY SIMULATED";
  ctx.font = "bold 12px system-ui"; ctx.textAlign = "right"; ctx.textBaseline = "top";
  const w = ctx.measureText(label).width + 12, x = m.l + pw - 6, y = m.t + 6;
  ctx.fillStyle = colour; ctx.fillRect(x - w, y - 3, w, 20);
  ctx.fillStyle = "#fff"; ctx.fillText(label, x - 6, y + 1);
}
function nearest(mx, my) {
  if (!chart.grid) return null;
  const c = chart.cell, gx = Math.floor(mx / c), gy = Math.floor(my / c); let best = null, bd = 100;
  for (let i = gx - 1; i <= gx + 1; i++) for (let j = gy - 1; j <= gy + 1; j++) {
    for (const p of chart.grid.get(i + "," + j) || []) { const d = (p.px - mx) ** 2 + (p.py - my) ** 2; if (d < bd) { bd = d; best = p; } } }
  return best;
}
function renderLegend(groups, dash) {
  const keys = groups ? Array.from(groups.keys()) : [];
  const hws = Array.from(new Set(keys.map((k) => k.split("\u0000")[0]))).sort();
  const engs = Array.from(new Set(keys.map((k) => k.split("\u0000")[1]))).sort();
  const sym = (shape, colour) => { const s = { o: '<circle cx="6" cy="6" r="5"/>', s: '<rect x="1" y="1" width="10" height="10"/>', "^": '<path d="M6 0L12 11H0Z"/>', v: '<path d="M6 12L12 1H0Z"/>', D: '<path d="M6 0L12 6L6 12L0 6Z"/>' }[shape] || '<circle cx="6" cy="6" r="5"/>';
    return '<svg viewBox="0 0 12 12" fill="' + colour + '">' + s + "</svg>"; };
  $("legend").innerHTML = hws.map((h) => "<span>" + sym("o", hwColour[h]) + esc(h) + "</span>").join("")
    + engs.map((e) => "<span>" + sym(engShape[e] || "o", cssVar("--muted")) + esc(e) + "</span>").join("")
    + '<span><svg viewBox="0 0 12 12"><path d="M0 6H12" stroke="' + cssVar("--fg") + '" stroke-opacity=".35" stroke-width="6"/><path d="M0 6H12" stroke="' + cssVar("--fg") + '" stroke-width="1.2" stroke-dasharray="3 2"/></svg>frontier (all)</span>'
    + (keys.length <= 24 ? keys.sort().map((k) => { const r = groups.get(k)[0].r, d = DASHES[dash[k]].map((v) => v / 2).join(" ");
      return '<span class="series" data-series="' + esc(seriesLabel(r)) + '"><svg viewBox="0 0 24 12" style="width:24px"><path d="M0 6H24" stroke="' + hwColour[r.hardware] + '" stroke-width="1.6"' + (d ? ' stroke-dasharray="' + d + '"' : "") + "/></svg>"
        + esc(r.hardware + " " + r.engine + " · " + seriesLabel(r)) + (r.mode === "disaggregated" ? " (disagg)" : "") + "</span>"; }).join("") : "");
}
function tipHtml(r) {
  const rowsHtml = [["recipe", esc(r.recipe)], ["engine", esc(r.engine + " " + (r.engine_version || ""))],
    ["precision", esc(r.precision)], ["topology", esc(r.topology) + " (" + r.gpus_total + " GPUs" + (r.mode === "disaggregated" ? ", " + r.gpus_prefill + "P/" + r.gpus_decode + "D, disaggregated" : ", aggregated") + ")"],
    ["workload", esc(r.workload) + " (" + r.isl + "/" + r.osl + ")"], ["concurrency", r.concurrency],
    ["run", esc(r.run_id)], ["runner", esc(r.runner)],
    [AX[state.y].label, fmt(val(r, state.y)) + (r.mode === "disaggregated" && DATA.per_gpu[state.y] ? ' <span class="muted">(' + esc(DATA.per_gpu[state.y]) + ")</span>" : "")], [AX[state.x].label, fmt(val(r, state.x))],
    ["median TTFT", fmt(r.median_ttft_ms) + " ms"], ["median TPOT", fmt(r.median_tpot_ms) + " ms"],
    ["error rate", fmt(100 * r.error_rate, 1) + " %"], ["status", esc(r.status)],
    ["source", r.simulated ? '<span class="badge sim">simulated</span> engine in ' + (r.launcher === "virtual" ? "virtual" : "real") + " time, not hardware" : "measured"]];
  const links = '<a href="' + esc(catalogHref(r)) + '">catalog entry (launch command)</a>' + (r.raw ? ' · <a href="' + esc(r.raw) + '">raw JSON</a>' : "")
    + ' · <button class="linkish" data-trend="' + esc(trendKey(r)) + '" data-conc="' + r.concurrency + '">trend across runs</button>';
  return "<table>" + rowsHtml.map((x) => "<tr><td>" + x[0] + "</td><td>" + x[1] + "</td></tr>").join("") + "</table><div>" + links + "</div>";
}
function showDetail(p) {
  const d = $("detail");
  if (!p) { d.hidden = true; d.textContent = ""; return; }
  const cmds = (DATA.launch || {})[p.r.recipe] || [];
  d.innerHTML = "<h2>" + esc(p.r.recipe) + " · " + esc(p.r.workload) + " · concurrency " + p.r.concurrency + "</h2>" + tipHtml(p.r)
    + (cmds.length ? "<h2>Launch commands</h2>" + cmds.map((c) => '<div class="muted">' + esc(c.name) + " (" + esc(c.role) + ')</div><pre class="cmd">' + esc(c.command) + "</pre>").join("")
                   : '<p class="muted">Full launch commands: see the catalog entry.</p>');
  d.hidden = false;
}
function showTip(p, pinned) {
  const tip = $("tip"), wrap = $("chart-wrap");
  if (!p) { if (!state.pinned) tip.hidden = true; return; }
  tip.innerHTML = tipHtml(p.r); tip.hidden = false; tip.classList.toggle("pinned", !!pinned);
  const w = tip.offsetWidth, h = tip.offsetHeight;
  tip.style.left = Math.min(p.px + 12, wrap.clientWidth - w - 4) + "px";
  tip.style.top = Math.max(4, Math.min(p.py + 12, wrap.clientHeight - h - 4)) + "px";
}
function setupHover() {
  const canvas = $("chart");
  canvas.addEventListener("mousemove", (e) => { if (state.pinned) return; const b = canvas.getBoundingClientRect(); showTip(nearest(e.clientX - b.left, e.clientY - b.top), false); });
  canvas.addEventListener("mouseleave", () => { if (!state.pinned) $("tip").hidden = true; });
  canvas.addEventListener("click", (e) => { const b = canvas.getBoundingClientRect(); const p = nearest(e.clientX - b.left, e.clientY - b.top);
    state.pinned = p; showDetail(p); if (p) showTip(p, true); else $("tip").hidden = true; });
}

// ---------------------------------------------------------------- best-at table
function renderBest(data) {
  const ths = $("c-best").value.split(",").map(Number).filter((v) => v > 0);
  const xh = AX.interactivity.higher, groups = new Map();
  for (const r of data) { if (r.interactivity === null || r.output_tput_per_gpu === null || r.status !== "ok") continue;
    const k = r.model + " · " + r.workload; if (!groups.has(k)) groups.set(k, []); groups.get(k).push(r); }
  let html = "<tr><th>model · workload</th><th>≥ tok/s/user</th><th>best configuration</th><th>conc</th><th>tok/s/GPU</th><th>tok/s/user</th><th>$/M out</th></tr>";
  for (const [k, g] of Array.from(groups).sort()) for (const t of ths) {
    let best = null; for (const r of g) if ((xh ? r.interactivity >= t : r.interactivity <= t) && (!best || r.output_tput_per_gpu > best.output_tput_per_gpu)) best = r;
    html += "<tr><td>" + esc(k) + '</td><td class="num">' + t + "</td>" + (best ? '<td><a href="' + esc(catalogHref(best)) + '">' + esc(best.recipe) + "</a> " + esc(best.topology) + '</td><td class="num">' + best.concurrency + '</td><td class="num">' + fmt(best.output_tput_per_gpu) + '</td><td class="num">' + fmt(best.interactivity) + '</td><td class="num">' + fmt(best.usd_per_m_output_tokens) + "</td>" : '<td class="muted" colspan="5">none meets it</td>') + "</tr>";
  }
  $("best").innerHTML = html;
}

// ---------------------------------------------------------------- table view
const TABLE_COLS = ["run_id", "recipe", "hardware", "engine", "precision", "topology", "gpus_total", "workload", "concurrency",
  "output_tput_per_gpu", "total_tput_per_gpu", "interactivity", "e2e_interactivity", "median_ttft_ms", "median_e2el_ms",
  "usd_per_m_output_tokens", "j_per_output_token", "error_rate", "status", "source"];
const PAGE = 200;
function renderTable(data) {
  const s = state.sort, sorted = data.slice().sort((a, b) => { const x = a[s.key], y = b[s.key];
    if (x === y) return 0; if (x === null) return 1; if (y === null) return -1; return (x < y ? -1 : 1) * s.dir; });
  const pages = Math.max(1, Math.ceil(sorted.length / PAGE)); state.page = Math.min(state.page, pages - 1);
  const part = sorted.slice(state.page * PAGE, (state.page + 1) * PAGE);
  const head = "<tr>" + TABLE_COLS.map((c) => '<th data-key="' + c + '">' + esc(c) + (c === s.key ? (s.dir > 0 ? " ▲" : " ▼") : "") + "</th>").join("") + "<th>links</th></tr>";
  const cell = (r, c) => c === "source" && r.simulated ? '<td><span class="badge sim">simulated</span></td>'
    : typeof r[c] === "number" ? '<td class="num">' + fmt(r[c]) + "</td>" : "<td>" + esc(r[c]) + "</td>";
  const body = part.map((r) => "<tr>" + TABLE_COLS.map((c) => cell(r, c)).join("")
    + '<td><a href="' + esc(catalogHref(r)) + '">catalog</a>' + (r.raw ? ' <a href="' + esc(r.raw) + '">raw</a>' : "") + "</td></tr>").join("");
  $("table").innerHTML = head + body;
  $("table").dataset.rows = String(sorted.length);
  $("pager-info").textContent = sorted.length.toLocaleString("en-US") + " rows · page " + (state.page + 1) + " / " + pages;
  $("table").querySelectorAll("th[data-key]").forEach((th) => th.addEventListener("click", () => {
    const k = th.dataset.key; state.sort = { key: k, dir: state.sort.key === k ? -state.sort.dir : -1 }; renderTable(filtered()); }));
}

// ---------------------------------------------------------------- compare view
// The regression rule of `infermatrix compare` (results/regression.py), for any two runs picked:
// a change counts only beyond z × the two levels' own bootstrap spread AND z × √2 × the
// configuration's night-to-night spread over the last `lookback` runs up to the base run (never
// the new one), or beyond the fixed band before `min_nights` runs of history. Spreads are
// standard deviations of log(value). DATA.compare_rule carries the CLI's defaults and run order.
const CMP = DATA.compare_metrics;  // [[metric, higherIsBetter], ...]
const RULE = DATA.compare_rule;
function historyRuns(base, neu) {  // regression.history_runs
  const kept = RULE.runs.filter((r) => r !== neu), at = kept.indexOf(base);
  return at < 0 ? [base] : kept.slice(0, at + 1).slice(-RULE.lookback);
}
function nightValues(r, metric, window) {  // regression.night_history, from the trend's points
  const t = TRENDS[trendKey(r)], level = t ? t.levels[String(r.concurrency)] : null;
  return ((level && level[metric]) || []).filter((p) => window.has(runs[p[0]])).map((p) => p[1]).slice(-RULE.lookback);
}
function nightSigma(values) {  // regression.night_sigma: the sample standard deviation of log(value)
  const logs = values.filter((v) => v !== null && v > 0).map(Math.log);
  if (logs.length < RULE.min_nights) return null;
  const mean = logs.reduce((a, x) => a + x, 0) / logs.length;
  return Math.sqrt(logs.reduce((a, x) => a + (x - mean) * (x - mean), 0) / (logs.length - 1));
}
function erf(x) {  // via erfc's Chebyshev fit (Numerical Recipes, 2nd ed., §6.2: fractional error < 1.2e-7)
  const t = 1 / (1 + 0.5 * Math.abs(x));
  const c = t * Math.exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? 1 - c : c - 1;
}
function judge(metric, higher, base, neu, z, history) {  // regression.judge; null: a side lacks the metric
  const old = base[metric], now = neu[metric];
  if (old === null || now === null || old === undefined || now === undefined || old <= 0 || now <= 0) return null;
  const d = Math.log(now / old);
  const sig = [base["sigma_" + metric], neu["sigma_" + metric]].filter((x) => x !== null && x !== undefined);
  const level = sig.length ? Math.sqrt(sig.reduce((a, x) => a + x * x, 0)) : null;
  const nights = nightSigma(history);
  const band = Math.max(z * (level || 0), nights !== null ? z * Math.SQRT2 * nights : RULE.noise);
  const change = (now - old) / old;
  const scale = Math.max(level || 0, nights !== null ? Math.SQRT2 * nights : 0);  // the larger noise
  return { change: change, worse: (d < 0) === higher, significant: Math.abs(change) > band, band: band, level: level,
    nights: nights, n: nights !== null ? history.length : 0, confidence: scale > 0 ? erf(Math.abs(d) / scale / Math.SQRT2) : null };
}
const pct1 = (x) => (100 * x).toFixed(1) + "%";
function confidenceText(c) {  // regression.confidence_text: 99.9 % rather than 100 %
  for (let d = 1; d <= 5; d++) if (Number((c * 100).toFixed(d - 1)) < 100) return (c * 100).toFixed(d - 1) + "%";
  return ">99.999%";
}
function noiseText(v) {  // the noise a change was weighed against, and how sure it is real
  const parts = [];
  if (v.level !== null) parts.push("levels ±" + pct1(1.96 * v.level));
  if (v.nights !== null) parts.push("nights ±" + pct1(1.96 * v.nights) + " over " + v.n + " runs");
  else parts.push("band ±" + pct1(v.band) + ": under " + RULE.min_nights + " runs of history");
  return parts.join(", ") + (v.confidence === null ? "" : "; " + confidenceText(v.confidence) + " confidence");
}
const changeText = (v) => (v.change >= 0 ? "+" : "") + pct1(v.change);
const verdictText = (v) => changeText(v) + " (" + noiseText(v) + ")";  // Verdict.text()
function ruleZ() {  // the z the page judges at: the CLI's default unless a person changed it
  const z = Number($("cmp-z").value);
  return $("cmp-z").value !== "" && Number.isFinite(z) && z >= 0 ? z : RULE.z;
}
function ruleLine(z, base) {  // compare.rule_line
  return "A change counts beyond z = " + z + (z === RULE.z ? " (infermatrix compare's default)" : " (infermatrix compare's default: " + RULE.z + ")")
    + " × both the levels' own bootstrap spread and the night-to-night spread over the last " + RULE.lookback + " runs up to "
    + base + "; ±" + pct1(RULE.noise) + " stands in for the nights of a configuration with under " + RULE.min_nights + " runs.";
}
const VERDICT = (v) => v === null ? "" : !v.significant ? "unchanged" : v.worse ? "regression" : "improvement";
function rowChange(x, y, verdicts) {  // compare.classify
  if (!x || !y) return !x ? "new" : "gone";
  const okx = x.status === "ok", oky = y.status === "ok";
  if (!okx || !oky) return !okx && !oky ? "failing" : okx ? "now failing" : "fixed";
  return verdicts.some((v) => v && v.significant && v.worse) ? "regression" : verdicts.some((v) => v && v.significant) ? "improved" : "same";
}
function renderCompare() {
  const base = $("cmp-base").value, neu = $("cmp-new").value, z = ruleZ();
  const keyOf = (r) => [r.recipe, r.workload, r.runner, r.concurrency].join("\u0000");
  const pool = filtered({ anyRun: true, anyStatus: true });
  const a = new Map(), b = new Map();
  for (const r of pool) { if (r.run_id === base) a.set(keyOf(r), r); if (r.run_id === neu) b.set(keyOf(r), r); }
  if (base === neu) {  // a run against itself shows no change: say so instead of a table of "same"
    $("cmp").innerHTML = ""; $("cmp").dataset.rows = "0";
    $("cmp-info").textContent = runs.length < 2 ? "Only one run: nothing to compare it with yet." : "Base and new are the same run: pick two different runs.";
    return;
  }
  // the nights come from the configurations' trends: load those not in yet, then draw
  const missing = Array.from(new Set(Array.from(b.values()).map(trendKey))).filter((k) => !TRENDS[k] && TREND_AT.has(k));
  if (missing.length) { loading(Promise.all(missing.map((k) => loadChunk("trend", TREND_AT.get(k)))), renderCompare); return; }
  const byConfig = (k1, k2) => { const p = a.get(k1) || b.get(k1), q = a.get(k2) || b.get(k2);
    return p.recipe < q.recipe ? -1 : p.recipe > q.recipe ? 1 : p.workload < q.workload ? -1 : p.workload > q.workload ? 1
      : p.runner < q.runner ? -1 : p.runner > q.runner ? 1 : p.concurrency - q.concurrency; };  // concurrency as a number
  const keys = Array.from(new Set([...a.keys(), ...b.keys()])).sort(byConfig);
  const history = new Set(historyRuns(base, neu));
  let reg = 0, imp = 0;
  const rowsHtml = keys.map((k) => { const x = a.get(k), y = b.get(k), any = y || x;
    const both = x && y && x.status === "ok" && y.status === "ok";
    const verdicts = CMP.map(([m, higher]) => both ? judge(m, higher, x, y, z, nightValues(y, m, history)) : null);
    const cells = CMP.map(([m], i) => { const v = verdicts[i], v1 = y && y.status === "ok" ? val(y, m) : null;
      if (v === null) return '<td class="num muted" data-metric="' + m + '">' + fmt(v1) + "</td>";
      const verdict = VERDICT(v), cls = verdict === "regression" ? "bad" : verdict === "improvement" ? "good" : "";
      return '<td class="num ' + cls + '" data-metric="' + m + '" data-verdict="' + verdict + '" title="' + esc(verdictText(v)) + '">' + fmt(v1)
        + " (" + changeText(v) + (v.significant ? (v.worse ? " ▼" : " ▲") : "") + ')<span class="why">'
        + esc(noiseText(v)) + "</span></td>"; }).join("");
    const change = rowChange(x, y, verdicts);
    if (change === "regression" || change === "now failing") reg++; if (change === "improved") imp++;
    return '<tr data-key="' + esc(k.split("\u0000").join("|")) + '"><td>' + esc(any.recipe) + ' <button class="linkish" data-trend="' + esc(trendKey(any)) + '" data-conc="' + any.concurrency + '">trend</button></td><td>' + esc(any.workload) + '</td><td class="num">' + any.concurrency + '</td><td class="' + (change === "regression" || change === "now failing" ? "bad" : change === "improved" || change === "fixed" ? "good" : "muted") + '" data-change="' + change + '">' + change + "</td>" + cells + "</tr>"; });
  $("cmp").dataset.rows = String(keys.length);
  $("cmp").innerHTML = "<tr><th>recipe</th><th>workload</th><th>conc</th><th>change</th>" + CMP.map((c) => "<th>" + esc(AX[c[0]] ? AX[c[0]].label : c[0]) + "</th>").join("") + "</tr>" + rowsHtml.join("");
  $("cmp-info").textContent = keys.length + " configurations · " + reg + " regressions · " + imp + " improvements. " + ruleLine(z, base);
}

// ---------------------------------------------------------------- trend view
// Per configuration (recipe × workload × runner): each headline metric across runs, a line per
// concurrency level, change points (report/trend.py) marked in red. Opened from a point's
// tooltip or a compare row ("trend" buttons carry the configuration's key).
const trendKey = (r) => [r.recipe, r.workload, r.runner].join("\u0000");
const tstate = { key: null, conc: "__all__" };
const LEVEL_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#9467BD", "#8C8C00", "#F0436A", "#17BECF"];
function openTrend(key, conc) { tstate.key = key; tstate.conc = conc === undefined ? "__all__" : String(conc); state.view = "trend"; render(); window.scrollTo(0, 0); }
function trendSvg(t, metric, levels) {
  const W = 560, H = 190, m = { l: 58, r: 12, t: 22, b: 30 }, pw = W - m.l - m.r, ph = H - m.t - m.b;
  const series = levels.map((c) => ({ c: c, pts: ((t.levels[c] || {})[metric] || []).map((p) => ({ run: p[0], v: p[1] * (AX[metric] ? AX[metric].scale : 1) })) })).filter((s) => s.pts.length);
  const all = series.flatMap((s) => s.pts);
  let h = '<figure class="trend" data-metric="' + metric + '"><figcaption>' + esc(AX[metric] ? AX[metric].label : metric) + "</figcaption>";
  if (!all.length) return h + '<p class="muted">not measured</p></figure>';
  const r0 = Math.min.apply(null, all.map((p) => p.run)), r1 = Math.max.apply(null, all.map((p) => p.run));
  let v0 = Math.min.apply(null, all.map((p) => p.v)), v1 = Math.max.apply(null, all.map((p) => p.v)); const pad = (v1 - v0) * 0.08 || Math.abs(v1) * 0.05 || 1; v0 -= pad; v1 += pad;
  const X = (run) => m.l + (r1 === r0 ? pw / 2 : (run - r0) / (r1 - r0) * pw), Y = (v) => m.t + ph - (v - v0) / (v1 - v0) * ph;
  h += '<svg viewBox="0 0 ' + W + " " + H + '" width="' + W + '" height="' + H + '" role="img">';
  for (const tk of niceTicks(v0, v1, 4)) h += '<line x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + Y(tk) + '" y2="' + Y(tk) + '" class="grid"/><text x="' + (m.l - 4) + '" y="' + Y(tk) + '" class="tick" text-anchor="end" dominant-baseline="middle">' + esc(fmt(tk)) + "</text>";
  h += '<text x="' + m.l + '" y="' + (H - 8) + '" class="tick">' + esc(runs[r0]) + '</text><text x="' + (W - m.r) + '" y="' + (H - 8) + '" class="tick" text-anchor="end">' + esc(runs[r1]) + "</text>";
  const changes = t.changes.filter((c) => c[0] === metric && levels.indexOf(String(c[1])) >= 0);
  for (const c of changes) { const x = X(c[2]);
    h += '<g class="change" data-conc="' + c[1] + '" data-run="' + esc(runs[c[2]]) + '"><title>change at ' + esc(runs[c[2]]) + " (concurrency " + c[1] + "): " + (c[3] >= 0 ? "+" : "") + (100 * c[3]).toFixed(1) + " %</title>"
      + '<line x1="' + x + '" x2="' + x + '" y1="' + m.t + '" y2="' + (m.t + ph) + '"/><path d="M' + (x - 5) + " " + (m.t - 2) + "h10l-5 8z\"/></g>"; }
  series.forEach((s) => { const col = LEVEL_COLOURS[levels.indexOf(s.c) % LEVEL_COLOURS.length];
    h += '<polyline fill="none" stroke="' + col + '" stroke-width="1.5" points="' + s.pts.map((p) => X(p.run) + "," + Y(p.v)).join(" ") + '"/>';
    h += s.pts.map((p) => '<circle cx="' + X(p.run) + '" cy="' + Y(p.v) + '" r="2.4" fill="' + col + '"><title>' + esc(runs[p.run]) + " · concurrency " + s.c + ": " + esc(fmt(p.v)) + "</title></circle>").join(""); });
  return h + "</svg></figure>";
}
const TREND_AT = new Map(CH.trends.map((t, i) => [t.key, i]));
function renderTrend() {
  // the configurations the filters let through, from the trends' index (no run need be loaded)
  const keys = CH.trends.filter((t) => FILTERS.every((k) => state.f[k] === "__all__" || t[k] === state.f[k])).map((t) => t.key);
  if (tstate.key && keys.indexOf(tstate.key) < 0 && TREND_AT.has(tstate.key)) keys.unshift(tstate.key);  // opened from a point the filters hide
  if (!tstate.key || keys.indexOf(tstate.key) < 0) tstate.key = keys.length ? keys[0] : null;
  const sel = $("t-config"); sel.textContent = "";
  keys.forEach((k) => sel.appendChild(option(k, k.split("\u0000").join(" · "), k === tstate.key)));
  const box = $("trend-charts");
  if (tstate.key && !TRENDS[tstate.key]) { loading(loadChunk("trend", TREND_AT.get(tstate.key)), renderTrend); return; }
  const t = tstate.key ? TRENDS[tstate.key] : null;
  if (!t) { box.innerHTML = '<p class="muted">No configuration matches the filters.</p>'; $("trend-info").textContent = ""; box.dataset.changes = "0"; return; }
  const levels = Object.keys(t.levels).sort((a, b) => a - b);
  fillSelect($("t-conc"), levels, tstate.conc, "all levels");
  const shown = tstate.conc === "__all__" ? levels : [tstate.conc];
  box.innerHTML = '<div class="trend-legend">' + shown.map((c) => '<span><svg viewBox="0 0 12 12"><circle cx="6" cy="6" r="5" fill="' + LEVEL_COLOURS[levels.indexOf(c) % LEVEL_COLOURS.length] + '"/></svg>concurrency ' + esc(c) + "</span>").join("") + "</div>"
    + CMP.map((c) => trendSvg(t, c[0], shown)).join("");
  const n = box.querySelectorAll(".change").length; box.dataset.changes = String(n); box.dataset.key = tstate.key;
  const measured = new Set(levels.flatMap((c) => Object.values(t.levels[c]).flatMap((pts) => pts.map((p) => p[0])))).size;
  $("trend-info").textContent = measured + " runs measured this configuration · " + n + " change point" + (n === 1 ? "" : "s") + " shown (a step beyond the run-to-run spread, see docs/dashboard.md)";
}

// ---------------------------------------------------------------- agentic capacity view
// DATA.agentic (absent without capacity searches): tiers loosest first, and one row per
// run × configuration with a cell per tier and the levels measured; `latest` marks each
// configuration's latest search. Same table as report/agentic.py's page.
const AG = DATA.agentic || null, AGROWS = AG ? AG.rows : [], AGRUNS = AG ? AG.runs : [];
const AG_METRICS = [["agents", "agents", "passing concurrency: the most concurrent agents that meet the tier"],
  ["agents_per_gpu", "/GPU", "agents per GPU, every pool's GPUs (prefill + decode)"],
  ["agents_per_mw", "/MW", "agents per MW of measured mean GPU power (the cell's tooltip: the kW)"],
  ["agents_per_usd_hour", "/$·h", "agents per US$ per hour of the deployment's GPUs"]];
const ag = { run: "__all__", f: {}, sort: null, selected: null };
FILTERS.forEach((k) => { ag.f[k] = "__all__"; });
const uniqOf = (list, k) => Array.from(new Set(list.map((r) => r[k]).filter((v) => v !== null && v !== ""))).sort();
let filtersFor = null;
function syncFilters() {  // the filter controls show the current view's values and selection
  const agv = state.view === "agentic"; if (filtersFor === agv) return; filtersFor = agv;
  FILTERS.forEach((k) => fillSelect($("f-" + k), agv ? uniqOf(AGROWS, k) : uniq(k), agv ? ag.f[k] : state.f[k], "all"));
  fillSelect($("f-run"), (agv ? AGRUNS : runs).slice().reverse(), agv ? ag.run : state.run, agv ? "latest search per configuration" : "all runs");
  if (!agv) badgeSimulatedRuns($("f-run"));
  $("f-failed").disabled = agv; $("f-failed").parentElement.hidden = agv;
}
function agFiltered() {
  return AGROWS.filter((r) => (ag.run === "__all__" ? r.latest : r.run_id === ag.run)
    && FILTERS.every((k) => ag.f[k] === "__all__" || r[k] === ag.f[k]));
}
function agRank(r, tiers) {  // agents per GPU, strictest tier first (as report/agentic.py rank_key)
  return tiers.slice().reverse().map((t) => { const c = r.tiers[t] || {}; const v = c.agents_per_gpu;
    return -(v !== null && v !== undefined ? v : (c.agents !== undefined ? c.agents : -1)); });
}
function agCompare(a, b, tiers) {
  if (ag.sort) { const ca = a.tiers[ag.sort.tier] || {}, cb = b.tiers[ag.sort.tier] || {};
    const x = ca[ag.sort.metric], y = cb[ag.sort.metric];
    if (x !== y) { if (x === null || x === undefined) return 1; if (y === null || y === undefined) return -1; return (x < y ? -1 : 1) * ag.sort.dir; } }
  const ka = agRank(a, tiers), kb = agRank(b, tiers);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i] - kb[i];
  return a.recipe < b.recipe ? -1 : a.recipe > b.recipe ? 1 : a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0;
}
function agBest(list, tier, metric) {  // the highest positive value when at least two rows have one
  const v = list.map((r) => (r.tiers[tier] || {})[metric]).filter((x) => x !== null && x !== undefined);
  const m = Math.max.apply(null, v); return v.length > 1 && m > 0 ? m : null;
}
function agBadges(r) {
  const b = []; if (r.mode === "disaggregated") b.push("disagg");
  if (r.simulated) b.push("sim" + (r.time_scale && r.time_scale !== 1 ? " ×" + fmt(r.time_scale) : ""));
  return b.map((x) => ' <span class="badge">' + esc(x) + "</span>").join("");
}
function agReason(r, tier, conc) { const lv = r.levels.find((l) => l.concurrency === conc); return lv && lv.tiers[tier] ? lv.tiers[tier].reason || "" : ""; }
function agCells(r, t, bests) {
  const c = r.tiers[t], n = AG_METRICS.length + 1;
  if (!c) return '<td class="muted tier-start" colspan="' + n + '">not searched</td>';
  let out = "";
  AG_METRICS.forEach(([m], i) => { const v = c[m]; let text = fmt(v), title = "";
    if (m === "agents" && c.bounded === false) text = "≥ " + fmt(v);
    if (m === "agents_per_mw") title = v === null || v === undefined ? "GPU power not measured" : fmt(c.agents_per_kw) + " agents per kW · " + fmt((c.avg_power_w || 0) / 1000) + " kW measured";
    const cls = "num" + (i === 0 ? " tier-start" : "") + (v !== null && v !== undefined && bests[m] !== null && v === bests[m] ? " best" : "");
    out += '<td class="' + cls + '" data-tier="' + esc(t) + '" data-metric="' + m + '"' + (title ? ' title="' + esc(title) + '"' : "") + ">" + esc(text) + "</td>"; });
  if (c.bounded === false) out += '<td class="muted" data-tier="' + esc(t) + '" data-metric="first_failing" title="the largest level searched still passed">not bounded</td>';
  else { const why = agReason(r, t, c.first_failing); out += '<td class="num" data-tier="' + esc(t) + '" data-metric="first_failing"' + (why ? ' title="' + esc(why) + '"' : "") + ">" + fmt(c.first_failing) + "</td>"; }
  return out;
}
function agTable(list, tiers) {
  const bests = {}; tiers.forEach((t) => { bests[t] = {}; AG_METRICS.forEach(([m]) => { bests[t][m] = agBest(list, t, m); }); });
  const head = (t) => { const c = list.map((r) => r.tiers[t]).find((x) => x);
    return '<th colspan="' + (AG_METRICS.length + 1) + '" class="tier">' + esc(t) + ' <span class="muted">P25 ≥ ' + fmt(c.min_output_speed) + " tok/s · P95 TTFT ≤ " + fmt(c.max_ttft_s) + " s</span></th>"; };
  const mark = (t, m) => ag.sort && ag.sort.tier === t && ag.sort.metric === m ? (ag.sort.dir > 0 ? " ▲" : " ▼") : "";
  let h = '<table class="data agentic"><thead><tr><th rowspan="2">configuration</th><th rowspan="2">hardware</th><th rowspan="2">engine</th><th rowspan="2">precision</th><th rowspan="2" class="num">GPUs</th><th rowspan="2" class="num">$/h</th>'
    + tiers.map(head).join("") + "</tr><tr>"
    + tiers.map((t) => AG_METRICS.map(([m, label, tip], i) => '<th class="num' + (i === 0 ? " tier-start" : "") + '" data-sort-tier="' + esc(t) + '" data-sort-metric="' + m + '" title="' + esc(tip) + '">' + esc(label) + mark(t, m) + "</th>").join("")
      + '<th class="num" data-sort-tier="' + esc(t) + '" data-sort-metric="first_failing" title="the lowest level that failed the tier">first fail' + mark(t, "first_failing") + "</th>").join("") + "</tr></thead><tbody>";
  for (const r of list) {
    const short = agShort(r);
    const title = r.recipe + " · run " + r.run_id + (r.source ? " · sessions: " + r.source : "");
    h += '<tr data-row="' + AGROWS.indexOf(r) + '" data-recipe="' + esc(r.recipe) + '" data-run="' + esc(r.run_id) + '"' + (ag.selected === r ? ' class="selected"' : "") + '><td title="' + esc(title) + '"><a href="' + esc(catalogHref(r)) + '">' + esc(short) + "</a>" + agBadges(r) + "</td><td>" + esc(r.hardware) + "</td><td>" + esc(r.engine) + "</td><td>" + esc(r.precision)
      + '</td><td class="num">' + fmt(r.gpus) + '</td><td class="num">' + fmt(r.usd_per_hour) + "</td>" + tiers.map((t) => agCells(r, t, bests[t])).join("") + "</tr>";
  }
  return h + "</tbody></table>";
}
function agShort(r) { return r.model && r.recipe.startsWith(r.model + "/") ? r.recipe.slice(r.model.length + 1) : r.recipe; }  // the group names the model
const AG_PER = AG_METRICS.slice(1);  // agents per GPU, per MW, per $·h
function agHeadline(list, tiers) {  // per SLO tier: the most agents per GPU, per MW and per $·h, and where
  let h = '<table class="data ag-best"><thead><tr><th>best per SLO tier</th>' + AG_PER.map(([m, label, tip]) => '<th class="num" title="' + esc(tip) + '">agents ' + esc(label) + "</th>").join("") + "</tr></thead><tbody>";
  for (const t of tiers) {
    h += '<tr data-tier="' + esc(t) + '"><td>' + esc(t) + "</td>" + AG_PER.map(([m]) => {
      let top = null;
      for (const r of list) { const v = (r.tiers[t] || {})[m]; if (v !== null && v !== undefined && (top === null || v > top.v)) top = { v: v, r: r }; }
      return top === null ? '<td class="muted" data-metric="' + m + '">–</td>'
        : '<td class="num" data-metric="' + m + '" data-recipe="' + esc(top.r.recipe) + '">' + esc(fmt(top.v)) + ' <span class="muted">' + esc(agShort(top.r)) + "</span></td>"; }).join("") + "</tr>";
  }
  return h + "</tbody></table>";
}
function agLevels(r, tiers) {
  const pct = (v, d) => v === null || v === undefined ? "–" : fmt(100 * v, d) + " %";
  const kilo = (v) => v === null || v === undefined ? null : v / 1000;
  return '<table class="data levels"><tr><th>concurrency</th><th>completed</th><th>errors</th><th>P25 tok/s</th><th>P95 TTFT s</th><th>cached</th><th>GPU kW</th>'
    + tiers.map((t) => "<th>" + esc(t) + "</th>").join("") + "</tr>"
    + r.levels.map((lv) => "<tr>" + [fmt(lv.concurrency), fmt(lv.completed), pct(lv.error_rate, 1), fmt(lv.p25_output_speed), fmt(kilo(lv.p95_ttft_ms)), pct(lv.cached_token_ratio, 0), fmt(kilo(lv.avg_power_w))].map((x) => '<td class="num">' + esc(x) + "</td>").join("")
      + tiers.map((t) => { const v = lv.tiers[t]; return !v ? '<td class="muted">–</td>' : v.passed ? '<td class="good">✓ pass</td>' : '<td class="bad">✗ ' + esc(v.reason || "fail") + "</td>"; }).join("") + "</tr>").join("") + "</table>";
}
function agDetail(r) {
  const d = $("ag-detail");
  if (!r) { d.hidden = true; d.textContent = ""; return; }
  const tiers = AG.tiers.map((t) => t.name).filter((t) => r.tiers[t]);
  d.innerHTML = "<h2>" + esc(r.recipe) + " · " + esc(r.workload) + " · run " + esc(r.run_id) + "</h2>"
    + (r.source ? '<p class="muted">Sessions: ' + esc(r.source) + "</p>" : "")
    + (r.simulated && r.time_scale && r.time_scale !== 1 ? '<p class="muted">Simulated engine at ×' + fmt(r.time_scale) + ": level figures are wall-clock, the tiers were judged in the same units.</p>" : "")
    + '<h3 class="muted">Levels searched</h3>' + agLevels(r, tiers);
  d.hidden = false;
}
function renderAgentic() {
  const list = agFiltered(), groups = new Map();
  for (const r of list) { const k = (r.model || "unknown model") + "\u0000" + r.workload; if (!groups.has(k)) groups.set(k, []); groups.get(k).push(r); }
  let h = "";
  for (const [k, members] of Array.from(groups).sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) {
    const [model, workload] = k.split("\u0000");
    const tiers = AG.tiers.map((t) => t.name).filter((t) => members.some((r) => r.tiers[t]));
    members.sort((a, b) => agCompare(a, b, tiers));
    h += '<section class="group" data-model="' + esc(model) + '" data-workload="' + esc(workload) + '"><h2>' + esc(model) + " · " + esc(workload)
      + ' <span class="muted">(' + members.length + " configuration" + (members.length === 1 ? "" : "s") + ')</span></h2><div class="scroll ag-best-wrap">' + agHeadline(members, tiers) + "</div><div class=\"scroll\">" + agTable(members, tiers) + "</div></section>";
  }
  const box = $("agentic");
  box.innerHTML = h || '<p class="muted">No capacity search matches the filters.</p>';
  box.dataset.rows = String(list.length); box.dataset.groups = String(groups.size);
  box.querySelectorAll("th[data-sort-metric]").forEach((th) => th.addEventListener("click", () => {
    const t = th.dataset.sortTier, m = th.dataset.sortMetric, same = ag.sort && ag.sort.tier === t && ag.sort.metric === m;
    ag.sort = { tier: t, metric: m, dir: same ? -ag.sort.dir : -1 }; renderAgentic(); }));
  box.querySelectorAll("tbody tr[data-row]").forEach((tr) => tr.addEventListener("click", (e) => {
    if (e.target.closest("a")) return;
    const r = AGROWS[Number(tr.dataset.row)]; ag.selected = ag.selected === r ? null : r; renderAgentic(); }));
  if (ag.selected && list.indexOf(ag.selected) < 0) ag.selected = null;
  agDetail(ag.selected);
}

// ---------------------------------------------------------------- top level
// the runs the current view shows: their chunks are loaded before it is drawn
function neededRuns() {
  if (state.view === "agentic" || state.view === "trend") return [];
  if (state.view === "compare") return [$("cmp-base").value, $("cmp-new").value];
  return state.run === "__all__" ? runs : [state.run];
}
let pending = 0;
function loading(promise, then) {  // shows "loading" until the chunks are in, then draws again
  pending++; document.body.dataset.loading = "1"; $("loading").hidden = false;
  promise.then(() => { pending--; then(); }, (e) => { pending--; $("loading").textContent = "Could not load the data: " + e.message; })
    .finally(() => { if (!pending) { document.body.dataset.loading = "0"; if (!$("loading").textContent.startsWith("Could")) $("loading").hidden = true; } });
}
function render() {
  document.querySelectorAll("nav button[data-view]").forEach((b) => b.setAttribute("aria-selected", String(b.dataset.view === state.view)));
  document.querySelectorAll(".view").forEach((v) => { v.hidden = v.id !== "view-" + state.view; });
  syncFilters();
  const missing = neededRuns().map((r) => runs.indexOf(r)).filter((i) => i >= 0 && chunkState.get("run:" + i) !== true);
  if (missing.length) { $("loading").textContent = "Loading " + missing.length + " run" + (missing.length === 1 ? "" : "s") + "…"; loading(Promise.all(missing.map((i) => loadChunk("run", i))), render); return; }
  if (state.view === "agentic") { renderAgentic(); return; }
  const data = filtered();
  if (state.view === "chart") { state.pinned = null; $("tip").hidden = true; showDetail(null); renderChart(data); renderBest(data); }
  else if (state.view === "table") renderTable(data);
  else if (state.view === "trend") renderTrend();
  else renderCompare();
}
function start() {
  // open on the agentic view when asked (index.html#agentic) or when there is nothing else
  if (AG && (location.hash === "#agentic" || (N === 0 && AGROWS.length))) state.view = "agentic";
  setupControls(); setupHover(); autoLogY();
  $("prev").addEventListener("click", () => { state.page = Math.max(0, state.page - 1); renderTable(filtered()); });
  $("next").addEventListener("click", () => { state.page += 1; renderTable(filtered()); });
  window.addEventListener("resize", () => { if (state.view === "chart") renderChart(filtered()); });
  window.addEventListener("hashchange", () => { if (AG && location.hash === "#agentic") { state.view = "agentic"; render(); } });
  document.body.dataset.loading = "0";
  render();
  document.body.dataset.ready = "1";
}
window.imx = { state: state, render: render, loadChunk: loadChunk, trend: tstate, trends: TRENDS, openTrend: openTrend, rows: rows, chart: chart, filtered: filtered, slug: slug, catalogHref: catalogHref,
  agentic: ag, agenticRows: AGROWS, agFiltered: agFiltered };
start();
})();
