// tilegate history dashboard: Plotly charts (the library is inlined, gzipped, in <script id="plotly">)
// of the data in <script id="data">. No network. The view (GPU, case, metric, runs) lives in the
// URL's #hash, so a link shows a view. When every chart is drawn, <body data-drawn="..."> lists them
// and data-drawn-ms says how long it took from navigation start; a script error sets data-errors.
"use strict";
(function () {
  const errors = [];
  function fail(message) {
    errors.push(String(message));
    document.body.dataset.errors = String(errors.length);
    const pre = document.getElementById("errors");
    pre.hidden = false;
    pre.textContent = "dashboard error: " + errors.join("\n");
  }
  window.addEventListener("error", (e) => fail(e.message || e));
  window.addEventListener("unhandledrejection", (e) => fail(e.reason && e.reason.stack ? e.reason.stack : e.reason));

  async function unpack(id) {
    const text = document.getElementById(id).textContent.trim();
    const bin = atob(text);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }

  const VERDICT = {
    R: ["REGRESSED", "#c62828"],
    U: ["UNSURE", "#ef6c00"],
    I: ["IMPROVED", "#2e7d32"],
    O: ["OK", "#546e7a"],
    N: ["NEW", "#6a1b9a"],
    M: ["NOT MEASURED", "#9e9e9e"],
    ".": ["no verdict stored", "#1565c0"],
    " ": ["not measured", "#bdbdbd"],
  };
  const COLORS = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037", "#ad1457"];
  const ENV_KEYS = ["triton", "torch", "driver", "cuda"];
  const FONT = { family: "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size: 12 };
  const CONFIG = { displaylogo: false, displayModeBar: "hover", responsive: true, scrollZoom: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const $ = (id) => document.getElementById(id);
  const state = { gpu: 0, caseId: null, metric: "v", run: null, a: null, b: null, all: false };
  let DATA = null;

  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (v !== null && v !== undefined) e.setAttribute(k, v);
    }
    for (const c of children || []) e.append(c);
    return e;
  }
  const short = (c) => (c || "?").slice(0, 8);
  const day = (w) => (w || "").slice(0, 16).replace("T", " ");
  const pct = (x) => (x >= 0 ? "+" : "") + (100 * x).toFixed(2) + " %";
  const gpu = () => DATA.gpus[state.gpu];
  // the reference variant every ratio is to, by its name in the results (e.g. "torch")
  const refName = (g) => g.reference || "the reference";
  const TP_TITLE = { "TFLOP/s": "TFLOP/s (the benchmark's work / median)", "GB/s": "GB/s (the benchmark's bytes / median)" };
  const nRuns = (g) => g.runs.id.length;
  const median = (xs) => {
    const s = xs.filter((x) => x !== null && x !== undefined).sort((a, b) => a - b);
    if (!s.length) return null;
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  };

  // --- runs, links ---------------------------------------------------------------------------
  function commitLink(g, i, text) {
    const repo = g.runs.repo[i];
    const sha = g.runs.commit[i];
    if (!repo) return el("code", { text: text || short(sha), title: sha });
    return el("a", { href: repo + "/commit/" + sha, "data-run": String(g.runs.id[i]), "data-kind": "commit", title: sha }, [el("code", { text: text || short(sha) })]);
  }
  function runLink(g, i) {
    const url = g.runs.url[i];
    return url ? el("a", { href: url, "data-run": String(g.runs.id[i]), "data-kind": "ci-run", text: "CI run" }) : el("span", { class: "sub", text: "no CI run stored" });
  }
  function clean(g) {
    const out = [];
    for (let i = 0; i < nRuns(g); i++) if (!g.runs.dirty[i]) out.push(i);
    return out;
  }
  function latestRun(g) {
    const c = clean(g);
    return c.length ? c[c.length - 1] : nRuns(g) - 1;
  }
  function envChanges(g) {
    const out = [];
    const c = clean(g);
    for (let k = 1; k < c.length; k++) {
      const i = c[k], j = c[k - 1];
      const what = ENV_KEYS.filter((key) => g.runs[key][i] !== g.runs[key][j]).map((key) => key + " " + g.runs[key][j] + " → " + g.runs[key][i]);
      if (what.length) out.push({ i: i, what: what.join(", ") });
    }
    return out;
  }
  function runLabel(g, i) {
    return "run " + g.runs.id[i] + " · " + short(g.runs.commit[i]) + " · " + day(g.runs.when[i]) + (g.runs.dirty[i] ? " · DIRTY" : "");
  }
  function byId(g) {
    const m = {};
    for (const c of g.cases) m[c.id] = c;
    return m;
  }

  // --- the reference level of a case and the "moved" score that sorts the overview ------------
  function level(c, g) {
    // the median of the case's first 10 clean runs: the overview shows what moved since
    const c0 = clean(g).filter((i) => c.v[i] !== null).slice(0, 10).map((i) => c.v[i]);
    return median(c0);
  }
  function moved(c, g) {
    if (c.cps.length) return 10 + Math.max(...c.cps.map((p) => Math.abs(p.size)));
    const idx = clean(g).filter((i) => c.v[i] !== null);
    if (idx.length < 2) return -1;
    const head = median(idx.slice(0, 5).map((i) => c.v[i]));
    const tail = median(idx.slice(-5).map((i) => c.v[i]));
    return Math.abs(tail / head - 1);
  }
  function defaultCase(g) {
    // the latest flagged case: the newest change point (largest if several), else a case the
    // latest clean run regressed, else the first case the latest clean run measured
    let best = null;
    for (const c of g.cases) for (const p of c.cps) {
      if (!best || p.i > best.i || (p.i === best.i && Math.abs(p.size) > Math.abs(best.size))) best = { i: p.i, size: p.size, id: c.id };
    }
    if (best) return best.id;
    const last = latestRun(g);
    const reg = g.cases.find((c) => c.verdict[last] === "R");
    if (reg) return reg.id;
    const measured = g.cases.find((c) => c.v[last] !== null);
    return (measured || g.cases[0]).id;
  }

  // --- the URL -------------------------------------------------------------------------------
  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const gi = DATA.gpus.findIndex((g) => g.slug === h.get("gpu"));
    state.gpu = gi >= 0 ? gi : 0;
    const g = gpu();
    const ids = byId(g);
    state.caseId = ids[h.get("case")] ? h.get("case") : defaultCase(g);
    state.metric = ["v", "med", "tflops"].includes(h.get("metric")) ? h.get("metric") : "v";
    const pos = (key) => {
      const id = Number(h.get(key));
      const i = g.runs.id.indexOf(id);
      return h.has(key) && i >= 0 ? i : null;
    };
    const c = clean(g);
    state.run = pos("run") ?? latestRun(g);
    state.b = pos("b") ?? latestRun(g);
    state.a = pos("a") ?? (c.length > 1 ? c[0] : 0);
    state.all = h.get("all") === "1";
    // #only=case,xtile: show only those sections (a view to link or to screenshot)
    state.only = h.get("only") || "";
    const only = state.only.split(",").filter(Boolean);
    document.querySelectorAll("main > section").forEach((s) => {
      s.hidden = only.length > 0 && !only.includes(s.id.replace(/-section$/, ""));
    });
  }
  function writeHash() {
    const g = gpu();
    const h = new URLSearchParams({ gpu: g.slug, case: state.caseId, metric: state.metric, run: g.runs.id[state.run], a: g.runs.id[state.a], b: g.runs.id[state.b] });
    if (state.all) h.set("all", "1");
    if (state.only) h.set("only", state.only);
    history.replaceState(null, "", "#" + h.toString());
    document.body.dataset.gpu = g.slug;
    document.body.dataset.case = state.caseId;
  }

  function axis(title, extra) {
    return Object.assign({ title: { text: title, standoff: 6 }, automargin: true, gridcolor: "#e6e9ec", zeroline: false, linecolor: "#9aa5ad", mirror: true, showline: true }, extra || {});
  }
  function layout(extra) {
    return Object.assign({ font: FONT, margin: { l: 60, r: 20, t: 30, b: 40 }, paper_bgcolor: "#fff", plot_bgcolor: "#fff", hovermode: "closest", legend: { orientation: "h", y: -0.18, x: 0, yanchor: "top" } }, extra || {});
  }

  // --- overview heatmap ----------------------------------------------------------------------
  function drawOverview() {
    const g = gpu();
    const cols = clean(g);
    const cases = g.cases.slice().map((c) => ({ c: c, score: moved(c, g) })).sort((x, y) => y.score - x.score || x.c.order - y.c.order).map((x) => x.c);
    const z = [], text = [];
    for (const c of cases) {
      const lv = level(c, g);
      z.push(cols.map((i) => (c.v[i] === null || !lv ? null : c.v[i] / lv - 1)));
    }
    const ys = cases.map((c) => c.id);
    const cpx = [], cpy = [], cpt = [];
    for (const c of cases) for (const p of c.cps) {
      const col = cols.indexOf(p.i);
      if (col >= 0) { cpx.push(col); cpy.push(c.id); cpt.push(pct(p.size)); }
    }
    const ticks = [];
    const step = Math.max(1, Math.ceil(cols.length / 10));
    for (let k = 0; k < cols.length; k += step) ticks.push(k);
    const traces = [
      {
        type: "heatmap", z: z, y: ys, x: cols.map((_, k) => k), zmin: -0.05, zmax: 0.05, zmid: 0,
        colorscale: [[0, "#1b7837"], [0.25, "#a6dba0"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1, "#b2182b"]],
        colorbar: { title: { text: "vs level", side: "right" }, tickformat: "+.0%", thickness: 12, len: Math.min(1, 300 / (ys.length * 12 + 60)), y: 1, yanchor: "top" },
        hovertemplate: "%{y}<br>column %{x}<br>%{z:+.2%} vs its level<extra></extra>", hoverongaps: false, xgap: 0, ygap: 1,
      },
      { type: "scatter", mode: "markers", x: cpx, y: cpy, text: cpt, name: "change point", marker: { symbol: "x-thin", size: 9, line: { width: 2, color: "#111" } }, hovertemplate: "%{y}<br>change point %{text}<extra></extra>", showlegend: false },
    ];
    const height = Math.max(220, 12 * ys.length + 90);
    const lay = layout({
      height: height, margin: { l: 10, r: 10, t: 10, b: 50 },
      xaxis: axis("clean runs, oldest first (commit)", { tickvals: ticks, ticktext: ticks.map((k) => short(g.runs.commit[cols[k]])), showgrid: false, range: [-0.5, cols.length - 0.5] }),
      yaxis: axis("", { range: [ys.length - 0.5, -0.5], tickfont: { size: 10 }, showgrid: false, dtick: 1 }),
    });
    $("overview-sub").textContent = ys.length + " cases × " + cols.length + " clean runs" + (cols.length < nRuns(g) ? " (" + (nRuns(g) - cols.length) + " dirty runs left out: drawn apart in the one-case chart)" : "");
    const div = $("overview");
    return Plotly.react(div, traces, lay, CONFIG).then(() => {
      div.removeAllListeners && div.removeAllListeners("plotly_click");
      div.on("plotly_click", (ev) => {
        const p = ev.points[0];
        if (!p) return;
        state.caseId = p.y;
        state.run = cols[Math.round(p.x)];
        update(["case", "run", "ratio-k"]);
        $("case-section").scrollIntoView();
      });
    });
  }

  // --- selected run --------------------------------------------------------------------------
  function drawRun() {
    const g = gpu();
    const i = state.run;
    const box = $("run-box");
    box.replaceChildren(
      el("strong", { text: "run " + g.runs.id[i] + " " }),
      commitLink(g, i), " · ", runLink(g, i), " · ",
      el("span", { text: day(g.runs.when[i]) + " · " + g.runs.profile[i] + " profile · " + ENV_KEYS.map((k) => k + " " + g.runs[k][i]).join(", ") + (g.runs.reference[i] ? " · reference variant " + g.runs.reference[i] : "") }),
      g.runs.dirty[i] ? el("span", { class: "dirty", text: " · DIRTY work tree: not the commit's code, left out of every series" }) : "",
      g.runs.throttled[i] ? el("span", { class: "dirty", text: " · throttled" }) : ""
    );
    box.dataset.run = String(g.runs.id[i]);
  }

  // --- change points -------------------------------------------------------------------------
  function drawChangePoints() {
    const g = gpu();
    const rows = [];
    for (const c of g.cases) for (const p of c.cps) rows.push({ c: c, p: p });
    rows.sort((x, y) => y.p.i - x.p.i || Math.abs(y.p.size) - Math.abs(x.p.size));
    $("cp-count").textContent = rows.length + " on " + g.slug;
    const m = DATA.method;
    $("cp-method").textContent = "Mann-Whitney p (scan-adjusted) < " + m.alpha + ", at least " + m.min_size + " clean runs each side, size at least " + (100 * m.min_effect).toFixed(1) + " %. Click a row to open the case at that run.";
    const prevClean = (i) => { const c = clean(g); const k = c.indexOf(i); return k > 0 ? c[k - 1] : i; };
    const table = el("table", {}, [el("tr", {}, ["case", "last run before .. first after (bisect here)", "size", "p", "environment change", "CI run"].map((t) => el("th", { text: t })))]);
    for (const { c, p } of rows) {
      const before = prevClean(p.i);
      const repo = g.runs.repo[p.i];
      const range = repo
        ? el("a", { href: repo + "/compare/" + g.runs.commit[before] + "..." + g.runs.commit[p.i], "data-run": String(g.runs.id[p.i]), "data-before": String(g.runs.id[before]), "data-kind": "compare", text: short(g.runs.commit[before]) + ".." + short(g.runs.commit[p.i]) })
        : el("code", { text: short(g.runs.commit[before]) + ".." + short(g.runs.commit[p.i]) });
      const tr = el("tr", { class: "pick", onclick: (e) => { if (e.target.closest("a")) return; state.caseId = c.id; state.run = p.i; update(["case", "run", "ratio-k"]); $("case-section").scrollIntoView(); } }, [
        el("td", { text: c.id }), el("td", {}, [range, el("div", {}, [el("code", { text: p.bisect || "" })]), p.culprit ? el("div", { class: "culprit", text: "bisect " + p.culprit }) : ""]),
        el("td", { class: "num " + (p.size > 0 ? "slower" : "faster"), text: pct(p.size) }),
        el("td", { class: "num", text: String(p.p) }), el("td", { text: p.env.join(", ") || "-" }), el("td", {}, [runLink(g, p.i)]),
      ]);
      table.append(tr);
    }
    $("cps").replaceChildren(rows.length ? table : el("p", { class: "help", text: "No change point." }));
  }

  // --- one case ------------------------------------------------------------------------------
  function values(g, c, i, metric) {
    if (metric === "v") return c.v[i];
    if (metric === "med") return c.med[i];
    return c.tp[i];  // the results row's tflops (else gbps)
  }
  function caseTraces(g, c, color, own) {
    const metric = c.metric === "median_s" && state.metric === "v" ? "med" : state.metric;
    const cl = [], dirty = [];
    for (let i = 0; i < nRuns(g); i++) if (c.v[i] !== null) (g.runs.dirty[i] ? dirty : cl).push(i);
    const x = (idx) => idx.map((i) => g.runs.when[i]);
    const y = (idx) => idx.map((i) => values(g, c, i, metric));
    const measures = (i) => (c.mem && c.mem[i] != null ? "<br>peak memory of one call " + c.mem[i] + " MiB" : "") + (c.pct && c.pct[i] != null ? "<br>" + c.pct[i] + " % of the GPU's peak (its work's bound)" : "");
    const hover = (idx) => idx.map((i) => runLabel(g, i) + "<br>" + VERDICT[c.verdict[i]][0] + measures(i) + "<br>" + ENV_KEYS.map((k) => k + " " + g.runs[k][i]).join(", "));
    const tag = state.all ? " " + g.slug : "";
    const out = [];
    if (own && metric !== "tflops") {
      // the tolerance band of the baseline in force at each run: base .. base x (1 + tolerance)
      const band = metric === "v" && c.metric === "ratio_to_reference" ? c.band : c.bandMed;
      const lo = [], hi = [], bx = [];
      let b = -1;
      for (const i of cl) {
        while (b + 1 < band.length && band[b + 1][0] <= i) b++;
        const seg = b >= 0 ? band[b] : null;
        bx.push(g.runs.when[i]);
        lo.push(seg && seg[1] !== null ? seg[1] : null);
        hi.push(seg && seg[1] !== null && seg[2] !== null ? seg[1] * (1 + seg[2]) : null);
      }
      if (lo.some((v) => v !== null)) {
        out.push({ type: "scatter", mode: "lines", x: bx, y: lo, line: { width: 1, color: "#9e9e9e", dash: "dot" }, name: "baseline", hoverinfo: "skip", connectgaps: false });
        out.push({ type: "scatter", mode: "lines", x: bx, y: hi, fill: "tonexty", fillcolor: "rgba(198,40,40,0.08)", line: { width: 1.5, color: "#c62828" }, name: "tolerance (slower than this fails)", hoverinfo: "skip", connectgaps: false });
      }
    }
    const err = metric === "med" ? { type: "data", symmetric: false, array: cl.map((i) => c.q3[i] - c.med[i]), arrayminus: cl.map((i) => c.med[i] - c.q1[i]), color: "rgba(84,110,122,0.45)", thickness: 1, width: 0 } : undefined;
    out.push({
      type: "scatter", mode: "lines+markers", x: x(cl), y: y(cl), text: hover(cl), customdata: cl, name: c.id + tag,
      line: { width: 1, color: own ? "#90a4ae" : color }, error_y: err,
      marker: { size: 6, color: own ? cl.map((i) => VERDICT[c.verdict[i]][1]) : color },
      hovertemplate: "%{text}<br>%{y:.4~f}<extra></extra>",
    });
    if (dirty.length) out.push({ type: "scatter", mode: "markers", x: x(dirty), y: y(dirty), text: hover(dirty), customdata: dirty, name: "dirty runs" + tag + " (not in the series)", marker: { size: 8, symbol: "circle-open", color: "#8d6e00", line: { width: 1.5 } }, hovertemplate: "%{text}<br>%{y:.4~f}<extra></extra>" });
    if (own && metric !== "tflops") {
      // the level between change points
      const cuts = [0, ...c.cps.map((p) => p.i), nRuns(g)];
      for (let k = 0; k + 1 < cuts.length; k++) {
        const seg = cl.filter((i) => i >= cuts[k] && i < cuts[k + 1]);
        const lv = median(seg.map((i) => values(g, c, i, metric)));
        if (seg.length && lv !== null) out.push({ type: "scatter", mode: "lines", x: [g.runs.when[seg[0]], g.runs.when[seg[seg.length - 1]]], y: [lv, lv], line: { color: "#37474f", width: 2 }, name: "level", showlegend: k === 0 && c.cps.length > 0, hoverinfo: "skip" });
      }
    }
    return { traces: out, metric: metric };
  }
  function drawCase() {
    const g = gpu();
    const c = byId(g)[state.caseId];
    const sel = $("case");
    sel.value = c.id;
    const own = caseTraces(g, c, COLORS[0], true);
    let traces = own.traces;
    if (state.all) {
      DATA.gpus.forEach((other, k) => {
        if (k === state.gpu) return;
        const oc = byId(other)[c.id];
        if (oc) traces = traces.concat(caseTraces(other, oc, COLORS[(k + 1) % COLORS.length], false).traces);
      });
    }
    const shapes = [];
    const annotations = [];
    for (const p of c.cps) {
      shapes.push({ type: "line", xref: "x", yref: "paper", x0: g.runs.when[p.i], x1: g.runs.when[p.i], y0: 0, y1: 1, line: { color: "#c62828", width: 2 } });
      annotations.push({ xref: "x", yref: "paper", x: g.runs.when[p.i], y: 1, yanchor: "bottom", text: "change " + pct(p.size), showarrow: false, font: { color: "#c62828", size: 11 } });
    }
    for (const e of envChanges(g)) {
      shapes.push({ type: "line", xref: "x", yref: "paper", x0: g.runs.when[e.i], x1: g.runs.when[e.i], y0: 0, y1: 1, line: { color: "#6a1b9a", width: 1, dash: "dash" } });
      annotations.push({ xref: "x", yref: "paper", x: g.runs.when[e.i], y: 0, yanchor: "bottom", xanchor: "left", text: e.what, showarrow: false, font: { color: "#6a1b9a", size: 10 }, bgcolor: "rgba(255,255,255,0.8)" });
    }
    if (state.run !== null && c.v[state.run] !== null) shapes.push({ type: "line", xref: "x", yref: "paper", x0: g.runs.when[state.run], x1: g.runs.when[state.run], y0: 0, y1: 1, line: { color: "#1565c0", width: 1, dash: "dot" } });
    const ytitle = { v: "ratio to " + refName(g) + " (same run)", med: "median time (µs), IQR bars", tflops: TP_TITLE[c.unit] || "throughput (not in these results)" }[own.metric];
    $("tp-unit").textContent = c.unit ? " (" + c.unit + ")" : "";
    const div = $("case-chart");
    div.dataset.case = c.id;
    div.dataset.metric = own.metric;
    const n = c.v.filter((v) => v !== null).length;
    $("case-notes").textContent = c.id + ": measured in " + n + " of " + nRuns(g) + " runs" + (c.cps.length ? "; change points: " + c.cps.map((p) => short(g.runs.commit[p.i]) + " " + pct(p.size)).join(", ") : "; no change point") + ". Drag to zoom, shift-drag or the toolbar to pan, double-click to reset; click a point to select its run.";
    return Plotly.react(div, traces, layout({ height: 420, margin: { l: 70, r: 30, t: 30, b: 40 }, xaxis: axis("measured (UTC)", { type: "date" }), yaxis: axis(ytitle), shapes: shapes, annotations: annotations, legend: { orientation: "h", y: -0.15, yanchor: "top", x: 0 } }), CONFIG).then(() => {
      div.removeAllListeners && div.removeAllListeners("plotly_click");
      div.on("plotly_click", (ev) => {
        const p = ev.points.find((q) => q.customdata !== undefined && q.data.name.indexOf(c.id) === 0 || (q.data.name || "").startsWith("dirty"));
        if (p && !state.all) { state.run = p.customdata; update(["run", "ratio-k", "case"]); }
      });
    });
  }

  // --- compare two runs ----------------------------------------------------------------------
  function drawCompare() {
    const g = gpu();
    const a = state.a, b = state.b;
    $("run-a").value = String(a);
    $("run-b").value = String(b);
    const rows = [];
    for (const c of g.cases) {
      if (c.v[a] !== null && c.v[b] !== null && c.v[a]) rows.push({ id: c.id, d: c.v[b] / c.v[a] - 1 });
    }
    rows.sort((x, y) => x.d - y.d);
    const sub = $("compare-sub");
    sub.replaceChildren(rows.length + " cases in both; ", commitLink(g, a), " → ", commitLink(g, b), " (ratio to " + refName(g) + ", or the median for " + refName(g) + " itself; red: slower)");
    const div = $("compare");
    return Plotly.react(div, [{
      type: "bar", orientation: "h", y: rows.map((r) => r.id), x: rows.map((r) => r.d),
      marker: { color: rows.map((r) => (r.d > 0 ? "#c62828" : "#2e7d32")) },
      hovertemplate: "%{y}: %{x:+.2%}<extra></extra>",
    }], layout({ height: Math.max(200, 12 * rows.length + 80), margin: { l: 10, r: 30, t: 10, b: 40 }, xaxis: axis("change from the first run to the second", { tickformat: "+.1%", zeroline: true, zerolinecolor: "#555" }), yaxis: axis("", { automargin: true, tickfont: { size: 10 }, dtick: 1 }), bargap: 0.15, showlegend: false }), CONFIG).then(() => {
      div.removeAllListeners && div.removeAllListeners("plotly_click");
      div.on("plotly_click", (ev) => { const p = ev.points[0]; if (p) { state.caseId = p.y; update(["case"]); $("case-section").scrollIntoView(); } });
    });
  }

  // --- relational pairs (faster / than, same run) ---------------------------------------------
  // Each pair (the page's data: g.pairs) runs over one axis, p.per, at p.values; p.rt[j][i] is its
  // same-run ratio at p.values[j] in run i, p.cases[j] the case id of its `faster` row there.
  function pairAxes(g) {
    const pers = [...new Set(g.pairs.map((p) => p.per))];
    const values = [...new Set(g.pairs.flatMap((p) => p.values))];
    const numeric = values.length > 0 && values.every((v) => typeof v === "number");
    if (numeric) values.sort((a, b) => a - b);
    // a log axis only for positive values spanning more than 8x (K 128..8192); else linear
    const log = numeric && values[0] > 0 && values[values.length - 1] / values[0] > 8;
    return { per: pers.join(", ") || "value", values: values, numeric: numeric, log: log };
  }
  function drawRatioK() {
    const g = gpu();
    const first = clean(g)[0] ?? 0;
    const ax = pairAxes(g);
    const traces = [];
    g.pairs.forEach((p, k) => {
      const color = COLORS[k % COLORS.length];
      const name = p.faster + " / " + p.than + " " + p.label;
      for (const [i, dash, what] of [[state.run, "solid", "selected"], [first, "dot", "first run"]]) {
        const xs = [], ys = [], ids = [];
        p.values.forEach((v, j) => {
          if (p.rt[j][i] !== null) { xs.push(v); ys.push(p.rt[j][i]); ids.push(p.cases[j]); }
        });
        if (xs.length) traces.push({ type: "scatter", mode: "lines+markers", x: xs, y: ys, customdata: ids, name: name + " (" + what + ")", line: { color: color, dash: dash, width: dash === "solid" ? 2 : 1 }, marker: { size: dash === "solid" ? 6 : 4 }, legendgroup: name, hovertemplate: name + " " + p.per + "=%{x}: %{y:.3f} (%{customdata})<extra>" + what + "</extra>" });
      }
    });
    const xaxis = ax.numeric ? { type: ax.log ? "log" : "linear", tickvals: ax.values } : { type: "category", categoryorder: "array", categoryarray: ax.values };
    const div = $("ratio-k");
    return Plotly.react(div, traces, layout({ height: 440, title: { text: "ratio against " + ax.per + ": run " + g.runs.id[state.run] + " solid, first run dotted", font: { size: 12 }, x: 0, xanchor: "left" }, margin: { l: 60, r: 20, t: 36, b: 40 }, xaxis: axis(ax.per, xaxis), yaxis: axis("faster / than (same run)"), shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, yref: "y", y0: 1, y1: 1, line: { color: "#555", width: 1 } }], legend: { orientation: "h", y: -0.2, yanchor: "top", x: 0, font: { size: 10 } } }), CONFIG);
  }
  function drawCrossover() {
    const g = gpu();
    const ax = pairAxes(g);
    const traces = [];
    // "none" (wins at every measured value) is drawn above the largest value: at twice it on a
    // numeric axis, as its own last category otherwise
    const top = ax.numeric && ax.values.length ? ax.values[ax.values.length - 1] : 0;
    const none = ax.numeric ? top * 2 : "none";
    g.pairs.forEach((p, k) => {
      const idx = [];
      for (let i = 0; i < nRuns(g); i++) if (p.crossover[i] !== null && !g.runs.dirty[i]) idx.push(i);
      // a run that did not measure the pair is a gap, not a flat line: only measured runs have points
      const x = [], y = [];
      let prev = -2;
      const c = clean(g);
      for (const i of idx) {
        if (prev >= 0 && c.indexOf(i) !== c.indexOf(prev) + 1) { x.push(null); y.push(null); }
        x.push(g.runs.when[i]); y.push(p.crossover[i] === 0 ? none : p.crossover[i]);
        prev = i;
      }
      traces.push({ type: "scatter", mode: "lines+markers", x: x, y: y, connectgaps: false, name: p.faster + " " + p.label, line: { color: COLORS[k % COLORS.length], shape: "hv", width: 1.5 }, marker: { size: 5 }, hovertemplate: "%{x}: crossover " + p.per + " %{y}<extra></extra>" });
    });
    const tickvals = ax.values.concat([none]);
    const yaxis = ax.numeric
      ? { type: ax.log ? "log" : "linear", tickvals: tickvals, ticktext: tickvals.map((v) => (v === none ? "none" : String(v))) }
      : { type: "category", categoryorder: "array", categoryarray: tickvals };
    const div = $("crossover");
    return Plotly.react(div, traces, layout({ height: 440, title: { text: "crossover " + ax.per + " per run", font: { size: 12 }, x: 0, xanchor: "left" }, margin: { l: 60, r: 20, t: 36, b: 40 }, xaxis: axis("measured (UTC)", { type: "date" }), yaxis: axis("crossover " + ax.per, yaxis), legend: { orientation: "h", y: -0.2, yanchor: "top", x: 0, font: { size: 10 } } }), CONFIG);
  }

  // --- controls ------------------------------------------------------------------------------
  function fillControls() {
    const g = gpu();
    const sel = $("case");
    sel.replaceChildren(...g.cases.map((c) => el("option", { value: c.id, text: c.id + (c.cps.length ? "  ⚑" : "") })));
    for (const id of ["run-a", "run-b"]) $(id).replaceChildren(...g.runs.id.map((_, i) => el("option", { value: String(i), text: runLabel(g, i) })));
    document.querySelectorAll('input[name="metric"]').forEach((r) => { r.checked = r.value === state.metric; });
    document.querySelectorAll(".ref-name").forEach((e) => { e.textContent = refName(g); });
    $("all-gpus").checked = state.all;
    $("all-gpus").disabled = DATA.gpus.length < 2;
    const c = clean(g).length;
    $("meta").textContent = nRuns(g) + " runs (" + c + " clean) on " + g.name + " · generated " + DATA.generated;
  }
  const DRAW = { overview: drawOverview, run: drawRun, changepoints: drawChangePoints, case: drawCase, compare: drawCompare, "ratio-k": drawRatioK, crossover: drawCrossover };
  function update(which) {
    writeHash();
    return Promise.all(which.map((w) => Promise.resolve(DRAW[w]())));
  }

  async function main() {
    const t0 = performance.now();
    DATA = JSON.parse(await unpack("data"));
    if (!DATA.gpus.length) {
      $("empty").hidden = false;
      $("loading").hidden = true;
      document.querySelectorAll("section").forEach((s) => { s.hidden = true; });
      document.body.dataset.drawn = "empty";
      return;
    }
    const lib = document.createElement("script");
    lib.textContent = await unpack("plotly");
    document.head.append(lib);
    const gsel = $("gpu");
    gsel.replaceChildren(...DATA.gpus.map((g, k) => el("option", { value: String(k), text: g.slug + " (" + nRuns(g) + " runs)" })));
    readHash();
    gsel.value = String(state.gpu);
    fillControls();
    gsel.addEventListener("change", () => { state.gpu = Number(gsel.value); const g = gpu(); state.caseId = defaultCase(g); state.run = state.b = latestRun(g); state.a = clean(g)[0] ?? 0; fillControls(); update(Object.keys(DRAW)); });
    $("case").addEventListener("change", (e) => { state.caseId = e.target.value; update(["case"]); });
    const step = (d) => { const g = gpu(); const k = g.cases.findIndex((c) => c.id === state.caseId); state.caseId = g.cases[(k + d + g.cases.length) % g.cases.length].id; update(["case"]); };
    $("prev").addEventListener("click", () => step(-1));
    $("next").addEventListener("click", () => step(1));
    document.querySelectorAll('input[name="metric"]').forEach((r) => r.addEventListener("change", () => { state.metric = r.value; update(["case"]); }));
    $("all-gpus").addEventListener("change", (e) => { state.all = e.target.checked; update(["case"]); });
    $("run-a").addEventListener("change", (e) => { state.a = Number(e.target.value); update(["compare"]); });
    $("run-b").addEventListener("change", (e) => { state.b = Number(e.target.value); update(["compare"]); });
    const order = ["overview", "run", "changepoints", "case", "compare", "ratio-k", "crossover"];
    await update(order);
    $("loading").hidden = true;
    document.body.dataset.drawn = order.join(",");
    document.body.dataset.drawnMs = String(Math.round(performance.now()));
    document.body.dataset.scriptMs = String(Math.round(performance.now() - t0));
  }
  main().catch((e) => fail(e && e.stack ? e.stack : e));
})();
