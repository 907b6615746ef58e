// tilegate history dashboard: canvas charts of the data in <script id="data">. No libraries, no
// network. The state (GPU, case, metric, run) lives in the URL's #hash, so a link shows a view.
"use strict";
(function () {
  const errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || e));
    document.body.dataset.errors = String(errors.length);
    const pre = document.getElementById("errors");
    pre.hidden = false;
    pre.textContent = "dashboard error: " + errors.join("\n");
  });

  const DATA = JSON.parse(document.getElementById("data").textContent);
  const VERDICT = {
    R: ["REGRESSED", "#c62828", "#fde0dc"],
    U: ["UNSURE", "#ef6c00", "#ffe9cc"],
    I: ["IMPROVED", "#2e7d32", "#dcf1dd"],
    O: ["OK", "#455a64", "#eef1f3"],
    N: ["NEW", "#6a1b9a", "#efe0f6"],
    M: ["NOT MEASURED", "#9e9e9e", "#f4f4f4"],
    ".": ["no verdict stored", "#1565c0", "#ffffff"],
  };
  const FAMILY_COLORS = ["#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#5d4037", "#ad1457"];
  const ENV_KEYS = ["triton", "torch", "driver", "cuda"];
  const state = { gpu: 0, caseId: null, metric: "v", run: null };
  const $ = (id) => document.getElementById(id);

  // --- helpers -------------------------------------------------------------------------------
  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v;
      else if (k === "style") e.style.cssText = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children || []) e.append(c);
    return e;
  }
  const short = (c) => (c || "?").slice(0, 8);
  const day = (w) => (w || "").slice(0, 10);
  const pct = (x) => (x >= 0 ? "+" : "") + (100 * x).toFixed(1) + " %";
  function fmt(x, metric) {
    if (x === null || x === undefined) return "-";
    return metric === "ms" ? (x / 1000).toFixed(4) + " ms" : x.toFixed(4);
  }
  function niceTicks(lo, hi, count) {
    const span = hi - lo || Math.abs(hi) || 1;
    const step0 = span / count;
    const mag = Math.pow(10, Math.floor(Math.log10(step0)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(+t.toFixed(12));
    return out;
  }
  function gpu() { return DATA.gpus[state.gpu]; }
  function runCount(g) { return g.runs.id.length; }
  function envChanges(g) {
    const out = [];
    for (let i = 1; i < runCount(g); i++) {
      const what = ENV_KEYS.filter((k) => g.runs[k][i] !== g.runs[k][i - 1])
        .map((k) => k + " " + g.runs[k][i - 1] + " \u2192 " + g.runs[k][i]);
      if (what.length) out.push({ i: i, what: what });
    }
    return out;
  }
  function runText(g, i) {
    const r = g.runs;
    return "run " + r.id[i] + " \u00b7 " + short(r.commit[i]) + (r.dirty[i] ? " (dirty)" : "") +
      "\n" + r.when[i] + " \u00b7 " + r.profile[i] + " profile" + (r.throttled[i] ? " \u00b7 THROTTLED" : "") +
      "\nTriton " + r.triton[i] + " \u00b7 torch " + r.torch[i] + "\ndriver " + r.driver[i] + " \u00b7 CUDA " + r.cuda[i];
  }

  // --- a canvas with axes, hover and click ------------------------------------------------------
  function setupCanvas(canvas) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 800;
    const h = Number(canvas.getAttribute("height")) || 300;
    canvas.style.height = h + "px";
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = "11px system-ui, sans-serif";
    canvas._hits = [];
    return { ctx: ctx, w: w, h: h };
  }
  function attachHover(canvas) {
    if (canvas._hover) return;
    canvas._hover = true;
    const tip = $("tip");
    function nearest(ev) {
      const rect = canvas.getBoundingClientRect();
      const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
      let best = null, bd = 1e9;
      for (const h of canvas._hits || []) {
        const d = Math.abs(h.x - x) + 0.35 * Math.abs(h.y - y);
        if (d < bd) { bd = d; best = h; }
      }
      return bd < 40 ? best : null;
    }
    canvas.addEventListener("mousemove", function (ev) {
      const h = nearest(ev);
      if (!h) { tip.hidden = true; return; }
      tip.textContent = h.text;
      tip.hidden = false;
      const x = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
      const y = Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 8);
      tip.style.left = x + "px";
      tip.style.top = y + "px";
    });
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; });
    canvas.addEventListener("click", function (ev) {
      const h = nearest(ev);
      if (h && h.run !== undefined) { state.run = h.run; update(); }
    });
  }
  function frame(ctx, box, xTicks, yTicks, yLabel) {
    ctx.strokeStyle = "#e3e7eb";
    ctx.lineWidth = 1;
    ctx.fillStyle = "#5f6b76";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const t of yTicks) {
      const y = Math.round(box.y(t.v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(box.l, y); ctx.lineTo(box.r, y); ctx.stroke();
      ctx.fillText(t.label, box.l - 6, y);
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (const t of xTicks) {
      const x = Math.round(box.x(t.v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, box.t); ctx.lineTo(x, box.b); ctx.stroke();
      const lines = t.label.split("\n");
      lines.forEach((s, k) => ctx.fillText(s, x, box.b + 5 + 12 * k));
    }
    ctx.strokeStyle = "#9aa5b1";
    ctx.strokeRect(box.l + 0.5, box.t + 0.5, box.r - box.l, box.b - box.t);
    if (yLabel) {
      ctx.save();
      ctx.translate(14, (box.t + box.b) / 2);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillText(yLabel, 0, 0);
      ctx.restore();
    }
  }
  function runTicks(g, box, n) {
    const want = Math.max(2, Math.floor((box.r - box.l) / 110));
    const step = Math.max(1, Math.ceil(n / want));
    const out = [];
    for (let i = 0; i < n; i += step) out.push({ v: i, label: short(g.runs.commit[i]) + "\n" + day(g.runs.when[i]) });
    return out;
  }
  function runScale(n, l, r) {
    return (i) => (n <= 1 ? (l + r) / 2 : l + 8 + (i / (n - 1)) * (r - l - 16));
  }
  function vline(ctx, box, x, color, dash, width) {
    ctx.save();
    ctx.strokeStyle = color;
    ctx.lineWidth = width || 1;
    ctx.setLineDash(dash || []);
    ctx.beginPath(); ctx.moveTo(Math.round(x) + 0.5, box.t); ctx.lineTo(Math.round(x) + 0.5, box.b); ctx.stroke();
    ctx.restore();
  }
  function label(ctx, text, x, y, color, bg) {
    ctx.save();
    ctx.font = "11px system-ui, sans-serif";
    const w = ctx.measureText(text).width + 8;
    ctx.fillStyle = bg || "rgba(255,255,255,0.9)";
    ctx.fillRect(x - w / 2, y - 8, w, 16);
    ctx.fillStyle = color;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillText(text, x, y);
    ctx.restore();
  }
  function legend(id, items) {
    const box = $(id);
    box.replaceChildren(...items.map(([color, text, dashed]) => el("span", {}, [
      el("i", { style: dashed ? "background: repeating-linear-gradient(90deg," + color + " 0 4px, transparent 4px 7px); height: 3px" : "background:" + color }),
      text,
    ])));
  }
  function bandAt(band, i) {
    let cur = null;
    for (const seg of band) { if (seg[0] <= i) cur = seg; else break; }
    return cur && cur[1] !== null && cur[2] !== null ? cur : null;
  }

  // --- the case chart ---------------------------------------------------------------------------
  function drawCase() {
    const g = gpu();
    const c = g.cases.find((x) => x.id === state.caseId);
    const canvas = $("case-chart");
    const { ctx, w, h } = setupCanvas(canvas);
    attachHover(canvas);
    canvas.dataset.case = c ? c.id : "";
    if (!c) return false;
    const n = runCount(g);
    const ms = state.metric === "med" || c.metric === "median_s";
    const vals = state.metric === "med" ? c.med : c.v;
    const band = state.metric === "med" ? c.bandMed : c.band;
    const unit = ms ? "ms" : "ratio";
    const conv = (x) => (ms ? x / 1000 : x); // medians are stored in us
    const ys = [];
    for (let i = 0; i < n; i++) {
      if (vals[i] === null) continue;
      ys.push(conv(vals[i]));
      if (state.metric === "med" && c.q1[i] !== null) { ys.push(conv(c.q1[i])); ys.push(conv(c.q3[i])); }
      const b = bandAt(band, i);
      if (b) { ys.push(conv(b[1]) * (1 - b[2])); ys.push(conv(b[1]) * (1 + b[2])); }
    }
    if (!ys.length) return false;
    let lo = Math.min(...ys), hi = Math.max(...ys);
    const pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.01 || 1;
    lo -= pad; hi += pad * 2.2; // room above for the change-point labels
    const box = { l: 64, r: w - 14, t: 12, b: h - 38 };
    box.x = runScale(n, box.l, box.r);
    box.y = (v) => box.b - ((v - lo) / (hi - lo)) * (box.b - box.t);
    const yt = niceTicks(lo, hi, 6).map((v) => ({ v: v, label: ms ? v.toFixed(v < 1 ? 4 : 3) : v.toFixed(3) }));
    frame(ctx, box, runTicks(g, box, n), yt, ms ? "median (ms)" : "time / cuBLAS time (same run)");
    const dx = n > 1 ? (box.x(1) - box.x(0)) / 2 : 8;
    // tolerance band of the baseline in force at each run
    for (let i = 0; i < n; i++) {
      const b = bandAt(band, i);
      if (!b) continue;
      const base = conv(b[1]);
      const x0 = box.x(i) - dx, x1 = box.x(i) + dx;
      ctx.fillStyle = "rgba(255, 193, 7, 0.16)";
      ctx.fillRect(x0, box.y(base * (1 + b[2])), x1 - x0, box.y(base * (1 - b[2])) - box.y(base * (1 + b[2])));
      ctx.fillStyle = "rgba(198, 40, 40, 0.65)";
      ctx.fillRect(x0, box.y(base * (1 + b[2])) - 0.75, x1 - x0, 1.5);
      ctx.fillStyle = "rgba(120, 120, 120, 0.55)";
      ctx.fillRect(x0, box.y(base) - 0.5, x1 - x0, 1);
    }
    // IQR of the per-round samples
    if (state.metric === "med") {
      ctx.fillStyle = "rgba(21, 101, 192, 0.13)";
      for (let i = 0; i < n; i++) {
        if (c.q1[i] === null) continue;
        const y1 = box.y(conv(c.q3[i])), y0 = box.y(conv(c.q1[i]));
        ctx.fillRect(box.x(i) - Math.max(1.5, dx * 0.8), y1, Math.max(3, dx * 1.6), y0 - y1);
      }
    }
    // environment changes
    for (const e of envChanges(g)) {
      const x = box.x(e.i) - dx;
      vline(ctx, box, x, "#78909c", [4, 3]);
      ctx.save();
      ctx.fillStyle = "#546e7a";
      ctx.translate(x + 3, box.b - 4);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "left";
      ctx.textBaseline = "top";
      ctx.fillText(e.what.join(", "), 0, 0);
      ctx.restore();
    }
    // change points, and the level of each segment between them
    const levels = [];
    let start = 0;
    c.cps.forEach((cp) => { levels.push([start, cp.i, cp.before]); start = cp.i; });
    if (c.cps.length) levels.push([start, n, c.cps[c.cps.length - 1].after]);
    const cpScale = state.metric === "med" && c.metric !== "median_s" ? null : (x) => conv(x);
    if (cpScale) {
      ctx.strokeStyle = "rgba(29, 35, 41, 0.55)";
      ctx.lineWidth = 2;
      for (const [a, b, v] of levels) {
        ctx.beginPath(); ctx.moveTo(box.x(a) - (a ? dx : 0), box.y(cpScale(v))); ctx.lineTo(box.x(b - 1) + dx, box.y(cpScale(v))); ctx.stroke();
      }
    }
    c.cps.forEach((cp, k) => {
      const x = box.x(cp.i) - dx;
      const color = cp.size > 0 ? "#c62828" : "#2e7d32";
      vline(ctx, box, x, color, [], 2);
      label(ctx, pct(cp.size) + "  p=" + cp.p.toExponential(0), Math.min(Math.max(x, box.l + 60), box.r - 60), box.t + 10 + 16 * (k % 2), color);
      canvas._hits.push({ x: x, y: box.t + 10, run: cp.i, text: "change point at run " + g.runs.id[cp.i] + ": " + pct(cp.size) +
        "\nlevel " + fmt(cp.before, c.metric === "median_s" ? "ms" : "") + " \u2192 " + fmt(cp.after, c.metric === "median_s" ? "ms" : "") +
        "\np = " + cp.p.toExponential(2) + " (scan-adjusted)\ncommits " + short(g.runs.commit[cp.i - 1]) + ".." + short(g.runs.commit[cp.i]) +
        (cp.env.length ? "\nenvironment: " + cp.env.join(", ") : "") });
    });
    // the series
    ctx.strokeStyle = "rgba(69, 90, 100, 0.55)";
    ctx.lineWidth = 1;
    ctx.beginPath();
    let open = false;
    for (let i = 0; i < n; i++) {
      if (vals[i] === null) continue;
      const x = box.x(i), y = box.y(conv(vals[i]));
      if (open) ctx.lineTo(x, y); else { ctx.moveTo(x, y); open = true; }
    }
    ctx.stroke();
    const r = n > 300 ? 1.6 : n > 80 ? 2.4 : 3.2;
    for (let i = 0; i < n; i++) {
      if (vals[i] === null) continue;
      const code = c.verdict[i] || ".";
      const x = box.x(i), y = box.y(conv(vals[i]));
      ctx.fillStyle = (VERDICT[code] || VERDICT["."])[1];
      const big = code === "R" || code === "U";
      ctx.beginPath(); ctx.arc(x, y, big ? r + 1.5 : r, 0, 2 * Math.PI); ctx.fill();
      const b = bandAt(band, i);
      canvas._hits.push({ x: x, y: y, run: i, text: runText(g, i) + "\n\n" + c.id + "\n" +
        (ms ? "median " + fmt(vals[i], "ms") : "ratio to cuBLAS " + fmt(vals[i], "")) +
        (c.q1[i] !== null ? "\nmedian " + fmt(c.med[i], "ms") + ", IQR " + fmt(c.q1[i], "ms") + " .. " + fmt(c.q3[i], "ms") : "") +
        (c.rt && c.rt[i] !== null ? "\nratio to twin " + c.rt[i].toFixed(4) : "") +
        "\nverdict: " + (VERDICT[code] || VERDICT["."])[0] +
        (b ? "\nbaseline " + fmt(b[1], ms ? "ms" : "") + ", tolerance " + (100 * b[2]).toFixed(1) + " %" : "") });
    }
    if (state.run !== null && state.run < n) vline(ctx, box, box.x(state.run), "rgba(21,101,192,0.5)", [2, 2]);
    legend("case-legend", [
      ["rgba(255, 193, 7, 0.5)", "tolerance band of the baseline (red edge: slower than this fails the gate)"],
      ...(state.metric === "med" ? [["rgba(21, 101, 192, 0.35)", "IQR of the per-round samples"]] : []),
      ["#c62828", "change point (slower)"], ["#2e7d32", "change point (faster)"],
      ["rgba(29, 35, 41, 0.55)", "level between change points"],
      ["#78909c", "Triton / torch / driver / CUDA changed", true],
      ...Object.values(VERDICT).filter((v) => v[0] !== "NOT MEASURED").map((v) => [v[1], v[0]]),
    ]);
    const notes = [];
    notes.push(c.id + ": " + c.variant + ", " + c.dtype + ", B " + c.layout + ", K = " + c.K +
      (c.twin ? "; cross-tile twin of " + c.twin : "") + ". " + c.cps.length + " change point(s).");
    if (c.metric === "median_s") notes.push("This is the reference row: its series is its own median, so a change here says the machine, the driver or torch changed.");
    if (!band.length) notes.push("No tolerance band: the runs were stored without a baseline (history add --baselines DIR) and none was found for this GPU.");
    $("case-notes").textContent = notes.join(" ");
    return true;
  }

  // --- cross-tile charts ------------------------------------------------------------------------
  function famName(f) { return f.faster + " / " + f.than + " \u00b7 " + f.dtype + " " + f.layout; }
  function famCase(g, f, K) { return g.cases.find((c) => c.variant === f.faster && c.twin === f.than && c.dtype === f.dtype && c.layout === f.layout && c.K === K); }
  function drawRatioK() {
    const g = gpu();
    const canvas = $("ratio-k");
    const { ctx, w, h } = setupCanvas(canvas);
    attachHover(canvas);
    const n = runCount(g);
    const fams = g.pairs;
    if (!fams.length || !n) return false;
    const sel = state.run !== null && state.run < n ? state.run : n - 1;
    $("ratio-k-run").textContent = "run " + g.runs.id[sel] + " (" + short(g.runs.commit[sel]) + ", " + day(g.runs.when[sel]) + "); dashed: the first stored run";
    const Ks = [...new Set(fams.flatMap((f) => f.Ks))].sort((a, b) => a - b);
    const lines = [];
    fams.forEach((f, k) => {
      for (const [run, dashed] of [[0, true], [sel, false]]) {
        const pts = [];
        for (const K of f.Ks) {
          const c = famCase(g, f, K);
          if (c && c.rt[run] !== null) pts.push([K, c.rt[run]]);
        }
        lines.push({ f: f, k: k, run: run, dashed: dashed, pts: pts });
      }
    });
    const ys = lines.flatMap((l) => l.pts.map((p) => p[1])).concat([1]);
    let lo = Math.min(...ys), hi = Math.max(...ys);
    const pad = (hi - lo) * 0.08 || 0.05;
    lo -= pad; hi += pad;
    const box = { l: 56, r: w - 14, t: 12, b: h - 30 };
    const lk = (K) => Math.log2(K);
    const k0 = lk(Ks[0]), k1 = lk(Ks[Ks.length - 1]);
    box.x = (K) => (k1 === k0 ? (box.l + box.r) / 2 : box.l + 18 + ((lk(K) - k0) / (k1 - k0)) * (box.r - box.l - 36));
    box.y = (v) => box.b - ((v - lo) / (hi - lo)) * (box.b - box.t);
    frame(ctx, box, Ks.map((K) => ({ v: K, label: "K " + K })), niceTicks(lo, hi, 6).map((v) => ({ v: v, label: v.toFixed(2) })), "cross-tile / twin (same run)");
    ctx.fillStyle = "rgba(46, 125, 50, 0.06)";
    ctx.fillRect(box.l, box.y(1), box.r - box.l, box.b - box.y(1));
    ctx.strokeStyle = "#455a64"; ctx.lineWidth = 1.5; ctx.setLineDash([6, 3]);
    ctx.beginPath(); ctx.moveTo(box.l, box.y(1)); ctx.lineTo(box.r, box.y(1)); ctx.stroke(); ctx.setLineDash([]);
    label(ctx, "1 = as fast as the twin", box.r - 80, box.y(1) - 10, "#455a64");
    for (const l of lines) {
      if (l.dashed && l.run === sel) continue;
      const color = FAMILY_COLORS[l.k % FAMILY_COLORS.length];
      ctx.strokeStyle = color; ctx.globalAlpha = l.dashed ? 0.45 : 1; ctx.lineWidth = l.dashed ? 1.5 : 2.2;
      ctx.setLineDash(l.dashed ? [5, 4] : []);
      ctx.beginPath();
      l.pts.forEach((p, i) => (i ? ctx.lineTo(box.x(p[0]), box.y(p[1])) : ctx.moveTo(box.x(p[0]), box.y(p[1]))));
      ctx.stroke(); ctx.setLineDash([]);
      ctx.fillStyle = color;
      for (const p of l.pts) {
        ctx.beginPath(); ctx.arc(box.x(p[0]), box.y(p[1]), l.dashed ? 2 : 3.2, 0, 2 * Math.PI); ctx.fill();
        canvas._hits.push({ x: box.x(p[0]), y: box.y(p[1]), text: famName(l.f) + "\nK = " + p[0] + ": " + p[1].toFixed(4) + (p[1] < 1 ? " (cross-tile wins)" : " (cross-tile loses)") + "\nrun " + g.runs.id[l.run] + " (" + short(g.runs.commit[l.run]) + ")" });
      }
      ctx.globalAlpha = 1;
    }
    legend("ratio-k-legend", fams.map((f, k) => [FAMILY_COLORS[k % FAMILY_COLORS.length], famName(f)]));
    return true;
  }
  function drawCrossover() {
    const g = gpu();
    const canvas = $("crossover");
    const { ctx, w, h } = setupCanvas(canvas);
    attachHover(canvas);
    const n = runCount(g);
    const fams = g.pairs;
    if (!fams.length || !n) return false;
    const Ks = [...new Set(fams.flatMap((f) => f.Ks))].sort((a, b) => a - b);
    const levels = Ks.length + 1; // the last level is "none": wins at every measured K
    const box = { l: 64, r: w - 14, t: 14, b: h - 38 };
    box.x = runScale(n, box.l, box.r);
    box.y = (lvl) => box.b - 10 - (lvl / (levels - 1)) * (box.b - box.t - 20);
    const lvlOf = (K) => (K === 0 ? Ks.length : Ks.indexOf(K));
    frame(ctx, box, runTicks(g, box, n), Ks.map((K, i) => ({ v: i, label: "K " + K })).concat([{ v: Ks.length, label: "none" }]), "crossover K");
    const dx = n > 1 ? (box.x(1) - box.x(0)) / 2 : 8;
    for (const e of envChanges(g)) vline(ctx, box, box.x(e.i) - dx, "#78909c", [4, 3]);
    fams.forEach((f, k) => {
      const color = FAMILY_COLORS[k % FAMILY_COLORS.length];
      const off = (k - (fams.length - 1) / 2) * 3;
      ctx.strokeStyle = color; ctx.lineWidth = 2;
      ctx.beginPath();
      let prev = null;
      for (let i = 0; i < n; i++) {
        const K = f.crossover[i];
        if (K === null) continue;
        const y = box.y(lvlOf(K)) + off, x = box.x(i);
        if (prev === null) ctx.moveTo(x, y); else { ctx.lineTo(x, prev); ctx.lineTo(x, y); }
        prev = y;
        canvas._hits.push({ x: x, y: y, run: i, text: famName(f) + "\ncrossover K: " + (K === 0 ? "none (wins at every measured K)" : K) + "\n" + runText(g, i) });
      }
      if (prev !== null) ctx.lineTo(box.x(n - 1) + dx, prev);
      ctx.stroke();
    });
    if (state.run !== null && state.run < n) vline(ctx, box, box.x(state.run), "rgba(21,101,192,0.5)", [2, 2]);
    legend("crossover-legend", fams.map((f, k) => [FAMILY_COLORS[k % FAMILY_COLORS.length], famName(f)]).concat([["#78909c", "environment changed", true]]));
    return true;
  }

  // --- tables -----------------------------------------------------------------------------------
  function drawVerdicts() {
    const g = gpu();
    const n = runCount(g);
    const last = n - 1;
    $("latest-run").textContent = n ? runText(g, last).split("\n").join(" \u00b7 ") : "";
    const cols = [];
    const seen = new Set();
    for (const c of g.cases) {
      const key = c.dtype + " " + c.layout + "|" + c.K;
      if (!seen.has(key)) { seen.add(key); cols.push({ dtype: c.dtype, layout: c.layout, K: c.K, key: key }); }
    }
    cols.sort((a, b) => (a.dtype + a.layout).localeCompare(b.dtype + b.layout) || a.K - b.K);
    const variants = [...new Set(g.cases.map((c) => c.variant))];
    const head1 = [el("th", { class: "name", rowspan: "2", text: "variant" })];
    const groups = [];
    for (const col of cols) {
      const name = col.dtype + " " + col.layout;
      if (groups.length && groups[groups.length - 1][0] === name) groups[groups.length - 1][1]++;
      else groups.push([name, 1]);
    }
    for (const [name, span] of groups) head1.push(el("th", { colspan: String(span), text: name }));
    const head2 = cols.map((col) => el("th", { text: "K " + col.K }));
    const counts = {};
    const body = variants.map((v) => el("tr", {}, [el("td", { class: "name", text: v })].concat(cols.map((col) => {
      const c = g.cases.find((x) => x.variant === v && x.dtype === col.dtype && x.layout === col.layout && x.K === col.K);
      if (!c || c.v[last] === null) return el("td", { text: "" });
      const code = c.verdict[last] || ".";
      counts[code] = (counts[code] || 0) + 1;
      const vd = VERDICT[code] || VERDICT["."];
      const val = c.metric === "median_s" ? (c.v[last] / 1000).toFixed(3) + " ms" : c.v[last].toFixed(3);
      return el("td", {
        class: "cell" + (c.id === state.caseId ? " sel" : ""),
        style: "background:" + vd[2] + "; color:" + vd[1] + (code === "R" || code === "U" ? "; font-weight:700" : ""),
        title: c.id + ": " + vd[0] + (c.cps.length ? "; " + c.cps.length + " change point(s)" : ""),
        text: val + (c.cps.length ? " \u2691" : ""),
        onclick: () => { state.caseId = c.id; update(true); },
      });
    }))));
    const summary = Object.entries(counts).map(([k, m]) => (VERDICT[k] || VERDICT["."])[0] + " " + m).join(" \u00b7 ");
    $("verdicts").replaceChildren(
      el("table", {}, [el("thead", {}, [el("tr", {}, head1), el("tr", {}, head2)]), el("tbody", {}, body)]),
      el("p", { class: "help", text: "Verdicts of this run: " + (summary || "none") + ". \u2691 = the case has change points." }),
    );
  }
  function drawChangePoints() {
    const g = gpu();
    const all = [];
    for (const c of g.cases) for (const cp of c.cps) all.push([c, cp]);
    all.sort((a, b) => b[1].i - a[1].i || Math.abs(b[1].size) - Math.abs(a[1].size));
    $("cp-count").textContent = all.length + " on " + g.slug;
    const m = DATA.method;
    $("cp-method").textContent = "Per case, on its ratio to cuBLAS measured in the same run (the reference row: its median), runs in measurement order. " +
      "Candidates from PELT (ruptures), kept when the segments either side differ by a two-sided Mann-Whitney test with scan-adjusted p < " + m.alpha +
      ", by at least " + (100 * m.min_effect).toFixed(1) + " %, with at least " + m.min_size + " runs each side. Click a row to see the case.";
    const rows = all.map(([c, cp]) => el("tr", { class: "click", onclick: () => { state.caseId = c.id; state.run = cp.i; update(true); } }, [
      el("td", { class: "name", text: day(g.runs.when[cp.i]) }),
      el("td", { class: "name" }, [el("code", { text: c.id })]),
      el("td", { class: cp.size > 0 ? "slower" : "faster", text: pct(cp.size) }),
      el("td", { text: fmt(cp.before, c.metric === "median_s" ? "ms" : "") + " \u2192 " + fmt(cp.after, c.metric === "median_s" ? "ms" : "") }),
      el("td", { class: "name" }, [el("code", { text: short(g.runs.commit[cp.i - 1]) + ".." + short(g.runs.commit[cp.i]) })]),
      el("td", { text: cp.p.toExponential(1) }),
      el("td", { class: "name", text: cp.env.join(", ") || "-" }),
    ]));
    $("cps").replaceChildren(all.length ? el("table", {}, [
      el("thead", {}, [el("tr", {}, ["first run after", "case", "change", "level", "commits (last old..first new)", "p", "environment changed"].map((t) => el("th", { class: "name", text: t })))]),
      el("tbody", {}, rows),
    ]) : el("p", { text: "No change point on this GPU." }));
  }

  // --- state and wiring -------------------------------------------------------------------------
  function readHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    const gi = DATA.gpus.findIndex((g) => g.slug === p.get("gpu"));
    if (gi >= 0) state.gpu = gi;
    if (p.get("case")) state.caseId = p.get("case");
    if (p.get("metric") === "med" || p.get("metric") === "v") state.metric = p.get("metric");
    const r = p.get("run");
    if (r !== null && DATA.gpus.length) {
      const idx = gpu().runs.id.indexOf(Number(r));
      state.run = idx >= 0 ? idx : null;
    }
  }
  function writeHash() {
    const g = gpu();
    const p = new URLSearchParams({ gpu: g.slug, case: state.caseId || "", metric: state.metric });
    if (state.run !== null) p.set("run", String(g.runs.id[state.run]));
    history.replaceState(null, "", "#" + p.toString());
  }
  function fillGpu() {
    $("gpu").replaceChildren(...DATA.gpus.map((g, i) => el("option", { value: String(i), text: g.name + " (" + g.slug + ", " + runCount(g) + " runs)" })));
    $("gpu").value = String(state.gpu);
  }
  function fillCases() {
    const g = gpu();
    if (!g.cases.some((c) => c.id === state.caseId)) {
      const flagged = g.cases.filter((c) => c.cps.length);
      state.caseId = (flagged[0] || g.cases.find((c) => c.twin) || g.cases[0] || {}).id || null;
    }
    const byVariant = {};
    for (const c of g.cases) (byVariant[c.variant] = byVariant[c.variant] || []).push(c);
    $("case").replaceChildren(...Object.entries(byVariant).map(([v, cs]) => el("optgroup", { label: v }, cs.map((c) =>
      el("option", { value: c.id, text: c.id + (c.cps.length ? "  \u2691 " + c.cps.length : "") })))));
    $("case").value = state.caseId || "";
    const c = g.cases.find((x) => x.id === state.caseId);
    $("metric-v-label").textContent = c && c.metric === "median_s" ? "median (reference row)" : "ratio to cuBLAS (same run)";
  }
  function update(scroll) {
    if (!DATA.gpus.length) return;
    const g = gpu();
    if (state.run !== null && state.run >= runCount(g)) state.run = null;
    fillCases();
    for (const r of document.querySelectorAll("input[name=metric]")) r.checked = r.value === state.metric;
    drawVerdicts();
    const drawn = [drawCase() && "case", drawRatioK() && "ratio-k", drawCrossover() && "crossover"].filter(Boolean);
    $("xtile-section").hidden = !g.pairs.length;
    drawChangePoints();
    writeHash();
    document.body.dataset.drawn = drawn.join(",");
    document.body.dataset.case = state.caseId || "";
    document.body.dataset.gpu = g.slug;
    if (scroll) $("case-section").scrollIntoView({ block: "start" });
  }
  function init() {
    const runs = DATA.gpus.reduce((s, g) => s + runCount(g), 0);
    $("meta").textContent = runs + " runs on " + DATA.gpus.length + " GPU(s) \u00b7 generated " + DATA.generated + " from " + DATA.store;
    if (!DATA.gpus.length) {
      $("empty").hidden = false;
      for (const id of ["verdicts-section", "case-section", "xtile-section", "cp-section"]) $(id).hidden = true;
      document.body.dataset.drawn = "empty";
      return;
    }
    readHash();
    fillGpu();
    $("gpu").addEventListener("change", (e) => { state.gpu = Number(e.target.value); state.run = null; update(); });
    $("case").addEventListener("change", (e) => { state.caseId = e.target.value; update(); });
    for (const [id, d] of [["prev", -1], ["next", 1]]) {
      $(id).addEventListener("click", () => {
        const cs = gpu().cases;
        const i = cs.findIndex((c) => c.id === state.caseId);
        state.caseId = cs[(i + d + cs.length) % cs.length].id;
        update();
      });
    }
    for (const r of document.querySelectorAll("input[name=metric]")) r.addEventListener("change", (e) => { state.metric = e.target.value; update(); });
    window.addEventListener("hashchange", () => { readHash(); fillGpu(); update(); });
    let pending = null;
    window.addEventListener("resize", () => { clearTimeout(pending); pending = setTimeout(() => update(), 120); });
    update();
  }
  init();
})();
