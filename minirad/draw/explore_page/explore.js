// minirad explore: the page's script.  Every number it shows comes from the JSON
// block that minirad wrote into this file; the one thing computed here is the
// elimination step of a clicked vertex (eliminateStep, a mirror of
// minirad.exact.elimination's step: the same products, summed in the same order).
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("minirad-data").textContent);
  const G = D.graph, L = D.layout;
  const n = G.names.length, m = G.sources.length;
  const NS = "http://www.w3.org/2000/svg";
  const PATH_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"];
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------ helpers
  function fmt(x, digits) {
    if (x === null || x === undefined) return "–";
    if (typeof x === "string") return x === "nan" ? "undefined" : x;  // 'inf', 'nan' from Python
    const n = Number(x.toPrecision(digits || 6));
    // JavaScript writes a number below 1e21 in full (1e20 as 21 digits): from 1e6 on, an
    // exponent, as Python's %g
    return Math.abs(n) >= 1e6 ? n.toExponential() : String(n);
  }
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function svgEl(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  const edgeName = (u, v) => G.names[u] + " → " + G.names[v];
  function table(node, head, rows) {
    clear(node);
    const tr = el("tr");
    head.forEach((h) => tr.appendChild(el("th", { scope: "col" }, h)));
    node.appendChild(tr);
    rows.forEach((row) => {
      const r = el("tr");
      row.forEach((cell) => {
        const td = el("td", cell.id ? { id: cell.id } : {}, cell.text !== undefined ? cell.text : cell);
        r.appendChild(td);
      });
      node.appendChild(r);
    });
  }

  // ------------------------------------------------------------ the graph picture
  const svg = $("graph");
  const box = (v) => ({ x: L.x[v], y: L.y[v], w: L.width[v] / 2 + 4, h: L.height[v] / 2 + 4 });
  const margin = 40;
  const minX = Math.min(...L.x.map((x, v) => x - L.width[v] / 2)) - margin;
  const maxX = Math.max(...L.x.map((x, v) => x + L.width[v] / 2)) + margin;
  const minY = Math.min(...L.y.map((y, v) => y - L.height[v] / 2)) - margin;
  const maxY = Math.max(...L.y.map((y, v) => y + L.height[v] / 2)) + margin + 14;
  svg.setAttribute("viewBox", [minX, minY, maxX - minX, maxY - minY].join(" "));
  const edgeLayer = svgEl("g", { "aria-hidden": "true" });
  const labelLayer = svgEl("g", { "aria-hidden": "true" });
  const vertexLayer = svgEl("g");
  const gridLayer = svgEl("g", { "aria-hidden": "true" });
  svg.append(edgeLayer, labelLayer, vertexLayer, gridLayer);

  function inside(p, b, pad) {
    return Math.abs(p[0] - b.x) < b.w + pad && Math.abs(p[1] - b.y) < b.h + pad;
  }
  function bezier(a, c, b, t) {
    const s = 1 - t;
    return [s * s * a[0] + 2 * s * t * c[0] + t * t * b[0], s * s * a[1] + 2 * s * t * c[1] + t * t * b[1]];
  }
  const routes = new Map();
  // A quadratic curve from u to v, bent sideways just enough to pass clear of the
  // other vertices (the first of a few bends that does), cut at the two boxes.
  function route(u, v) {
    const key = u + ">" + v;
    if (routes.has(key)) return routes.get(key);
    const a = [L.x[u], L.y[u]], b = [L.x[v], L.y[v]];
    const dx = b[0] - a[0], dy = b[1] - a[1], len = Math.hypot(dx, dy) || 1;
    const normal = [-dy / len, dx / len];
    let chosen = null;
    for (const bend of [0, 30, -30, 60, -60, 95, -95, 130, -130, 170, -170]) {
      const c = [(a[0] + b[0]) / 2 + normal[0] * bend * 2, (a[1] + b[1]) / 2 + normal[1] * bend * 2];
      let clearOfAll = true;
      for (let t = 0.05; t < 0.96 && clearOfAll; t += 0.05) {
        const p = bezier(a, c, b, t);
        for (let w = 0; w < n; w++) {
          if (w !== u && w !== v && inside(p, box(w), 6)) { clearOfAll = false; break; }
        }
      }
      if (clearOfAll) { chosen = c; break; }
    }
    if (chosen === null) chosen = [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2];
    let t0 = 0, t1 = 1;
    while (t0 < 0.5 && inside(bezier(a, chosen, b, t0), box(u), 0)) t0 += 0.005;
    while (t1 > 0.5 && inside(bezier(a, chosen, b, t1), box(v), 0)) t1 -= 0.005;
    const points = [];
    for (let i = 0; i <= 24; i++) points.push(bezier(a, chosen, b, t0 + (t1 - t0) * i / 24));
    const result = { points };
    routes.set(key, result);
    return result;
  }
  function drawEdge(edge) {
    const r = route(edge.u, edge.v);
    const g = svgEl("g", { class: "edge " + (edge.cls || ""), "data-edge": edge.u + ">" + edge.v });
    const d = "M" + r.points.map((p) => p[0].toFixed(1) + "," + p[1].toFixed(1)).join("L");
    g.appendChild(svgEl("path", { class: "line", d }));
    const end = r.points[r.points.length - 1], before = r.points[r.points.length - 3];
    const ux = end[0] - before[0], uy = end[1] - before[1], l = Math.hypot(ux, uy) || 1;
    const fx = ux / l, fy = uy / l, size = 9;
    const head = [end, [end[0] - fx * size - fy * size * 0.45, end[1] - fy * size + fx * size * 0.45],
      [end[0] - fx * size + fy * size * 0.45, end[1] - fy * size - fx * size * 0.45]];
    g.appendChild(svgEl("path", { class: "head", d: "M" + head.map((p) => p.join(",")).join("L") + "Z" }));
    edgeLayer.appendChild(g);
  }
  // Each label beside its edge, on a white background: the first place along the edge
  // (the middle first), on either side of the line, where it covers no vertex and no
  // label placed before it; on the line itself only where nothing else is free.
  function placeLabels(edges) {
    const placed = [];
    const free = (p, w, h) => placed.every((q) => Math.abs(p[0] - q[0]) > (w + q[2]) / 2 + 2 || Math.abs(p[1] - q[1]) > (h + q[3]) / 2 + 1)
      && G.names.every((_, v) => !inside(p, { x: L.x[v], y: L.y[v], w: L.width[v] / 2 + w / 2, h: L.height[v] / 2 + h / 2 }, 0));
    edges.forEach((edge) => {
      if (!edge.label) return;
      const points = route(edge.u, edge.v).points, w = edge.label.length * 6.3 + 6, h = 15;
      const spots = [];
      for (const i of [12, 9, 15, 7, 17, 5, 19]) {
        const before = points[i - 1], after = points[i + 1], p = points[i];
        const dx = after[0] - before[0], dy = after[1] - before[1], len = Math.hypot(dx, dy) || 1;
        const nx = -dy / len, ny = dx / len;
        const off = Math.abs(nx) * w / 2 + Math.abs(ny) * h / 2 + 3;  // clear of the line
        spots.push([p[0] + nx * off, p[1] + ny * off], [p[0] - nx * off, p[1] - ny * off]);
      }
      [12, 9, 15].forEach((i) => spots.push(points[i]));
      const spot = spots.find((p) => free(p, w, h)) || spots[0];
      placed.push([spot[0], spot[1], w, h]);
      const label = svgEl("g", { class: "elabel-box" + (edge.cls && edge.cls.includes("dim") ? " dim" : ""), "data-edge": edge.u + ">" + edge.v });
      const text = svgEl("text", { class: "elabel", x: spot[0].toFixed(1), y: spot[1].toFixed(1) }, edge.label);
      const back = svgEl("rect", { class: "elabel-bg", x: (spot[0] - w / 2).toFixed(1), y: (spot[1] - h / 2).toFixed(1),
        width: w.toFixed(1), height: String(h), rx: "3" });
      label.append(back, text);
      labelLayer.appendChild(label);
      const drawn = text.getBBox();  // the text as rendered: the background fits it
      if (drawn.width > 0) {
        back.setAttribute("x", (drawn.x - 3).toFixed(1));
        back.setAttribute("width", (drawn.width + 6).toFixed(1));
      }
    });
  }

  const vertexNodes = [], vertexNotes = [];
  function shapeFor(v) {
    const w = L.width[v] / 2, h = L.height[v] / 2, x = L.x[v], y = L.y[v];
    if (G.kinds[v] === "input") return svgEl("rect", { class: "shape", x: x - w, y: y - h, width: 2 * w, height: 2 * h, rx: 8 });
    if (G.kinds[v] === "intermediate") return svgEl("ellipse", { class: "shape", cx: x, cy: y, rx: w, ry: h });
    const c = Math.min(w, h) * 0.45;
    const pts = [[x - w + c, y - h], [x + w - c, y - h], [x + w, y - h + c], [x + w, y + h - c],
      [x + w - c, y + h], [x - w + c, y + h], [x - w, y + h - c], [x - w, y - h + c]];
    return svgEl("polygon", { class: "shape", points: pts.map((p) => p.join(",")).join(" ") });
  }
  for (let v = 0; v < n; v++) {
    const g = svgEl("g", { class: "vertex " + G.kinds[v], tabindex: "0", role: "button", "data-vertex": String(v) });
    g.appendChild(shapeFor(v));
    const lines = L.lines[v];
    lines.forEach((line, i) => g.appendChild(svgEl("text", { x: L.x[v], y: L.y[v] + (i - (lines.length - 1) / 2) * 16 }, line)));
    const note = svgEl("text", { class: "vnote", x: L.x[v] + L.width[v] / 2 + 5, y: L.y[v] - L.height[v] / 2 + 2 }, "");
    g.appendChild(note);
    vertexNodes.push(g);
    vertexNotes.push(note);
    vertexLayer.appendChild(g);
  }

  // A view: which edges to draw (with classes and labels) and how to mark the vertices.
  // The entries of an array, as a grid beside its vertex: kept ones filled (the
  // second level of a sample); too many to draw are said in words.
  function drawGrid(v, kept) {
    const dims = G.dims[v], rows = dims.length > 1 ? dims.slice(0, -1).reduce((a, b) => a * b, 1) : 1;
    const cols = dims.length ? dims[dims.length - 1] : 1, cell = 8;
    const x0 = L.x[v] + L.width[v] / 2 + 8, y0 = L.y[v] - Math.min(rows * cell, L.height[v]) / 2;
    const count = kept.filter((w) => w !== 0).length;
    if (rows * cols > 400) {
      gridLayer.appendChild(svgEl("text", { class: "gridnote", x: x0, y: L.y[v] }, count + " of " + kept.length + " kept"));
      return;
    }
    kept.forEach((w, i) => {
      gridLayer.appendChild(svgEl("rect", { class: w !== 0 ? "cell kept" : "cell", x: x0 + (i % cols) * cell,
        y: y0 + Math.floor(i / cols) * cell, width: cell - 1, height: cell - 1 }));
    });
  }
  function show(view) {
    clear(edgeLayer);
    clear(labelLayer);
    clear(gridLayer);
    Object.entries(view.grids || {}).forEach(([v, kept]) => drawGrid(Number(v), kept));
    // dim edges first, so that highlighted ones are drawn over them
    const order = view.edges.slice().sort((a, b) => (b.cls || "").includes("dim") - (a.cls || "").includes("dim"));
    order.forEach(drawEdge);
    placeLabels(order.slice().reverse());  // the highlighted edges' labels get the best places
    for (let v = 0; v < n; v++) {
      const node = vertexNodes[v];
      node.setAttribute("class", "vertex " + G.kinds[v] + " " + ((view.vertexClass && view.vertexClass[v]) || "")
        + (hovered === v ? " hover" : ""));
      vertexNotes[v].textContent = (view.notes && view.notes[v]) || "";
      node.style.display = view.hidden && view.hidden[v] ? "none" : "";
      node.setAttribute("aria-label", (view.aria && view.aria[v]) || describe(v));
    }
    $("legend").replaceChildren(...(view.legend || []).map(([cls, text]) => {
      const span = el("span");
      span.append(el("span", { class: "legend-swatch " + cls.split(" ").slice(1).join(" "), style: "border-color:" + cls.split(" ")[0] }), text);
      return span;
    }));
  }
  function describe(v) {
    return G.names[v] + ", " + G.kinds[v] + (D.kind === "scalars" ? ", value " + fmt(G.values[v]) : ", " + G.shapes[v]);
  }
  const originalEdges = (labelOf, clsOf) => G.sources.map((u, e) => ({ u, v: G.targets[e], label: labelOf ? labelOf(e) : "", cls: clsOf ? clsOf(e) : "" }));

  // ------------------------------------------------------------ modes
  let mode = null, hovered = null;
  const modes = {};
  function redraw() { if (mode !== null) show(modes[mode].view()); }
  function setMode(name) {
    mode = name;
    document.querySelectorAll('[role="tab"]').forEach((tab) => {
      const on = tab.dataset.mode === name;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      $("panel-" + tab.dataset.mode).hidden = !on;
    });
    // the open tab is part of the address (figure1.html#sample), so that a link, a
    // reload or a bookmark opens the page on it
    if (location.hash.slice(1) !== name) {
      try { history.replaceState(null, "", "#" + name); } catch (error) { /* a frame without an address */ }
    }
    redraw();
  }
  window.addEventListener("hashchange", () => {
    const wanted = location.hash.slice(1);
    if (wanted !== mode && available.includes(wanted)) setMode(wanted);
  });
  const tabs = Array.from(document.querySelectorAll('[role="tab"]'));
  tabs.forEach((tab) => {
    tab.addEventListener("click", () => setMode(tab.dataset.mode));
    tab.addEventListener("keydown", (event) => {
      const shown = tabs.filter((t) => !t.hidden);
      const i = shown.indexOf(tab);
      let next = null;
      if (event.key === "ArrowRight") next = shown[(i + 1) % shown.length];
      if (event.key === "ArrowLeft") next = shown[(i - 1 + shown.length) % shown.length];
      if (event.key === "Home") next = shown[0];
      if (event.key === "End") next = shown[shown.length - 1];
      if (next) { event.preventDefault(); next.focus(); setMode(next.dataset.mode); }
    });
  });
  vertexNodes.forEach((node, v) => {
    const enter = () => { hovered = v; if (modes[mode].hover) modes[mode].hover(v); redraw(); };
    const leave = () => { if (hovered === v) hovered = null; if (modes[mode].hover) modes[mode].hover(null); redraw(); };
    node.addEventListener("mouseenter", enter);
    node.addEventListener("focus", enter);
    node.addEventListener("mouseleave", leave);
    node.addEventListener("blur", leave);
    node.addEventListener("click", () => { if (modes[mode].activate) modes[mode].activate(v); });
    node.addEventListener("keydown", (event) => {
      if ((event.key === "Enter" || event.key === " ") && modes[mode].activate) { event.preventDefault(); modes[mode].activate(v); }
    });
  });

  // ------------------------------------------------------------ Exact
  modes.exact = (function () {
    const sweeps = D.exact.sweeps;
    const choice = $("sweep-choice");
    sweeps.forEach((s, i) => {
      const seed = s.seed >= 0 ? G.names[s.seed] : "ones at the outputs";
      const what = s.direction === "forward" ? "forward: tangents d·/d" + seed : (s.seed >= 0 ? "reverse: adjoints d" + seed + "/d·" : "reverse: adjoints, seeded with " + seed);
      choice.appendChild(el("option", { value: String(i) }, what));
    });
    let reached = 0;
    const sweep = () => sweeps[Number(choice.value)];
    function noteOf(s, v) {
      const value = s.values[v];
      if (value === null) return "no adjoint";
      if (typeof value === "object") return "‖ā‖ = " + fmt(value.norm, 4);
      return (s.direction === "forward" ? "v̇ = " : "ā = ") + fmt(value, 4);
    }
    function status() {
      const s = sweep();
      const log = $("sweep-log");
      clear(log);
      s.order.slice(0, reached).forEach((v) => {
        const value = s.values[v];
        const text = typeof value === "object" && value !== null
          ? G.names[v] + ": adjoint " + value.shape + ", norm " + fmt(value.norm) + ", first entries " + value.first.map((x) => fmt(x, 4)).join(", ")
          : G.names[v] + ": " + (s.direction === "forward" ? "tangent " : "adjoint ") + fmt(value);
        log.appendChild(el("li", {}, text));
      });
      $("sweep-status").textContent = reached < s.order.length
        ? reached + " of " + s.order.length + " vertices reached"
        : "done: " + s.multiplications + " multiplications" + (s.additions !== undefined ? ", " + s.additions + " additions" : "") + " (minirad's count for this sweep)";
    }
    choice.addEventListener("change", () => { reached = 0; status(); redraw(); });
    $("sweep-step").addEventListener("click", () => { reached = Math.min(reached + 1, sweep().order.length); status(); redraw(); });
    $("sweep-all").addEventListener("click", () => { reached = sweep().order.length; status(); redraw(); });
    $("sweep-reset").addEventListener("click", () => { reached = 0; status(); redraw(); });
    status();
    function info(v) {
      const card = $("vertex-info");
      clear(card);
      if (v === null) { card.textContent = "Hover over a vertex, or move to it with Tab, to see its value, its operation and the local partials on the edges into it."; return; }
      card.appendChild(el("p", { class: "mono" }, G.ops[v]));
      if (D.kind === "scalars") {
        card.appendChild(el("p", {}, G.kinds[v] + ", value " + fmt(G.values[v], 8)));
        const into = G.targets.map((t, e) => (t === v ? e : -1)).filter((e) => e >= 0);
        if (into.length) {
          const list = el("ul");
          into.forEach((e) => list.appendChild(el("li", { class: "mono" }, "∂" + G.names[v] + "/∂" + G.names[G.sources[e]] + " = " + fmt(G.labels[e], 8))));
          card.append(el("p", {}, "local partials:"), list);
        }
      } else {
        card.appendChild(el("p", {}, G.kinds[v] + ", " + G.shapes[v] + ", " + G.dtypes[v]));
        const into = G.targets.map((t, e) => (t === v ? e : -1)).filter((e) => e >= 0);
        const bytes = D.memory.steps[0].per_edge;
        if (into.length) {
          const list = el("ul");
          into.forEach((e) => list.appendChild(el("li", {}, "from " + G.names[G.sources[e]] + ": " + G.labels[e] + ", " + G.flops[e] + " flops, keeps " + fmt(bytes[e]) + " B")));
          card.append(el("p", {}, "Jacobian blocks on the edges into it:"), list);
        }
      }
    }
    return {
      hover: info,
      view() {
        const s = sweep();
        const done = new Set(s.order.slice(0, reached));
        const current = reached > 0 ? s.order[reached - 1] : -1;
        const edges = originalEdges((e) => (D.kind === "scalars" ? fmt(G.labels[e], 4) : G.labels[e]), (e) => {
          const into = s.direction === "forward" ? G.targets[e] : G.sources[e];
          return into === current ? "used" : "";
        });
        const vertexClass = {}, notes = {};
        done.forEach((v) => { vertexClass[v] = v === current ? "current" : "reached"; notes[v] = noteOf(s, v); });
        return { edges, vertexClass, notes, legend: [["#0072B2", "edges the current vertex reads"]] };
      },
    };
  })();

  // ------------------------------------------------------------ Eliminate
  // The working graph as minirad.exact.elimination keeps it: pred[v] maps each
  // predecessor to its partial in insertion order (operands, then fill-in), succ[u]
  // is an insertion-ordered set; an eliminated vertex has pred[v] === null.
  function freshWorking() {
    const pred = Array.from({ length: n }, () => new Map());
    const succ = Array.from({ length: n }, () => new Map());
    for (let e = 0; e < m; e++) {
      pred[G.targets[e]].set(G.sources[e], G.labels[e]);
      succ[G.sources[e]].set(G.targets[e], true);
    }
    return { pred, succ };
  }
  function copyWorking(w) {
    return { pred: w.pred.map((p) => (p === null ? null : new Map(p))), succ: w.succ.map((s) => (s === null ? null : new Map(s))) };
  }
  // One elimination step, in place: minirad's _Working.eliminate, operation for operation.
  function eliminateStep(w, v) {
    const below = Array.from(w.pred[v].entries());
    const succs = Array.from(w.succ[v].keys()).sort((a, b) => a - b);
    const fillIn = [], updated = [];
    for (const s of succs) {
      const into = w.pred[s];
      const dsv = into.get(v);
      into.delete(v);
      for (const [p, dvp] of below) {
        const product = dsv * dvp;
        if (into.has(p)) { into.set(p, into.get(p) + product); updated.push([p, s]); }
        else { into.set(p, product); w.succ[p].set(s, true); fillIn.push([p, s]); }
      }
    }
    for (const [p] of below) w.succ[p].delete(v);
    w.pred[v] = null;
    w.succ[v] = null;
    return {
      vertex: v, predecessors: below.map(([p]) => p), successors: succs, fillIn, updated,
      fillInLabels: fillIn.map(([p, s]) => w.pred[s].get(p)), updatedLabels: updated.map(([p, s]) => w.pred[s].get(p)),
      multiplications: below.length * succs.length, additions: updated.length,
    };
  }
  // Elimination on Jacobian blocks: the page cannot multiply operators, so every step
  // is minirad's own, looked up (minirad.draw.explore_arrays.elimination_section): the
  // named orders' steps, and for a small graph the step of each vertex from every set
  // of eliminated ones. The graph left is kept by applying each step's fill-in.
  function blockElimination(E) {
    const inter = E.intermediates, bit = new Map(inter.map((v, i) => [v, 1 << i]));
    let mask = 0, edges = null, history = [], steps = [], queue = null, timer = null, preview = null;
    const fresh = () => new Map(G.sources.map((u, e) => [u + ">" + G.targets[e], G.labels[e]]));
    edges = fresh();
    $("elim-total").textContent = String(inter.length);
    const buttons = $("elim-orders");
    Object.keys(E.orders).forEach((name) => {
      const b = el("button", { "data-order": name, id: "play-" + name }, name + " (" + E.orders[name].multiplications + " mult.)");
      b.addEventListener("click", () => play(name));
      buttons.appendChild(b);
    });
    $("elim-check").className = "note";
    $("elim-check").textContent = E.states
      ? "On blocks every step is minirad's own (minirad.eliminate on the graph left), looked up: the page cannot multiply operators."
      : "On blocks every step is minirad's own, looked up; with more than " + E.clickable_limit + " intermediates only minirad's orders can be played.";
    const alive = (v) => G.kinds[v] === "intermediate" && !(mask & bit.get(v));
    const stepOf = (v) => (E.states ? E.states[mask][String(v)] : null);
    function apply(record) {
      const v = record.vertex;
      record.predecessors.forEach((p) => edges.delete(p + ">" + v));
      record.successors.forEach((s) => edges.delete(v + ">" + s));
      record.fill_in.forEach(([p, s], i) => edges.set(p + ">" + s, record.fill_in_labels[i].split(" ")[0]));
      record.updated.forEach(([p, s], i) => edges.set(p + ">" + s, record.updated_labels[i].split(" ")[0]));
    }
    function doStep(record) {
      history.push([mask, new Map(edges)]);
      apply(record);
      mask |= bit.get(record.vertex);
      steps.push(record);
      status();
    }
    function stop() { if (timer !== null) { clearInterval(timer); timer = null; } }
    function reset() { mask = 0; edges = fresh(); history = []; steps = []; queue = null; status(); }
    function play(name) {
      stop();
      reset();
      queue = { name, records: E.orders[name].steps, next: 0 };
      timer = setInterval(() => { if (!advance()) stop(); }, 900);
      status();
    }
    function advance() {
      if (!queue || queue.next >= queue.records.length) return false;
      doStep(queue.records[queue.next++]);
      redraw();
      return queue.next < queue.records.length;
    }
    $("elim-step").addEventListener("click", () => { stop(); advance(); });
    $("elim-pause").addEventListener("click", () => { stop(); status(); });
    $("elim-undo").addEventListener("click", () => {
      stop();
      if (!history.length) return;
      [mask, edges] = history.pop();
      steps.pop();
      if (queue) queue.next = Math.max(0, queue.next - 1);
      status();
      redraw();
    });
    $("elim-reset").addEventListener("click", () => { stop(); reset(); redraw(); });
    function status() {
      const mults = steps.reduce((t, s) => t + s.multiplications, 0), adds = steps.reduce((t, s) => t + s.additions, 0);
      $("elim-mults").textContent = String(mults);
      $("elim-adds").textContent = String(adds);
      $("elim-done").textContent = String(steps.length);
      $("elim-step").disabled = !queue || queue.next >= queue.records.length;
      $("elim-pause").disabled = timer === null;
      $("elim-undo").disabled = !history.length;
      const log = $("elim-log");
      clear(log);
      steps.forEach((s, i) => {
        const text = "eliminate " + G.names[s.vertex] + ": " + s.multiplications + " multiplications of entries, " + s.additions + " addition"
          + (s.additions === 1 ? "" : "s") + (s.fill_in.length ? "; fill-in " + s.fill_in.map(([p, q], j) => edgeName(p, q) + " (" + s.fill_in_labels[j] + ")").join(", ") : "")
          + (s.updated.length ? "; updated " + s.updated.map(([p, q], j) => edgeName(p, q) + " (" + s.updated_labels[j] + ")").join(", ") : "");
        log.appendChild(el("li", { id: "elim-step-" + (i + 1) }, text));
      });
      const box = $("elim-jacobian");
      clear(box);
      if (steps.length === inter.length) {
        box.appendChild(el("h3", {}, "The bipartite graph left holds the Jacobian's blocks"));
        const list = el("ul", { id: "elim-jacobian-blocks" });
        edges.forEach((label, key) => {
          const [p, s] = key.split(">").map(Number);
          list.appendChild(el("li", {}, "∂" + G.names[s] + "/∂" + G.names[p] + ": " + label));
        });
        box.appendChild(list);
      }
    }
    status();
    return {
      activate(v) {
        if (!alive(v)) return;
        const record = stepOf(v);
        if (!record) { $("elim-preview").textContent = "This graph has more than " + E.clickable_limit + " intermediates: play one of minirad's orders."; return; }
        stop();
        queue = null;
        doStep(record);
        preview = null;
        redraw();
      },
      hover(v) {
        preview = v !== null && alive(v) && stepOf(v) ? v : null;
        $("elim-preview").textContent = preview === null ? "" : "eliminating " + G.names[preview] + " costs " + stepOf(preview).multiplications
          + " multiplications of entries (" + stepOf(preview).predecessors.length + " × " + stepOf(preview).successors.length + " block products)";
      },
      view() {
        const last = steps[steps.length - 1];
        const made = new Set(last ? last.fill_in.map(([p, s]) => p + ">" + s) : []);
        const changed = new Set(last ? last.updated.map(([p, s]) => p + ">" + s) : []);
        const shown = [];
        edges.forEach((label, key) => {
          const [u, v] = key.split(">").map(Number);
          let cls = made.has(key) ? "fillin" : changed.has(key) ? "updated" : "";
          if (preview !== null && (u === preview || v === preview)) cls = "step";
          shown.push({ u, v, label, cls });
        });
        if (last) {
          last.predecessors.forEach((p) => shown.push({ u: p, v: last.vertex, label: "", cls: "removed" }));
          last.successors.forEach((s) => shown.push({ u: last.vertex, v: s, label: "", cls: "removed" }));
        }
        const vertexClass = {}, aria = {}, hidden = {};
        for (let v = 0; v < n; v++) {
          if (alive(v)) { vertexClass[v] = "clickable"; aria[v] = G.names[v] + ", intermediate array: press Enter to eliminate it"; }
          else if (G.kinds[v] === "intermediate" && (!last || v !== last.vertex)) hidden[v] = true;
        }
        if (last) vertexClass[last.vertex] = "skipped";
        return {
          edges: shown, vertexClass, aria, hidden,
          legend: [["#E69F00 dotted", "edges of the last array eliminated (removed)"], ["#CC79A7 dashed", "fill-in: a product of blocks"],
            ["#009E73", "updated: a product added"], ["#E69F00", "edges of the array under the pointer"]],
        };
      },
    };
  }

  modes.eliminate = (function () {
    const E = D.elimination;
    if (!E) return { view: () => ({ edges: originalEdges((e) => G.labels[e]) }) };
    if (D.kind === "arrays") return blockElimination(E);
    const intermediates = E.intermediates;
    let work = freshWorking(), history = [], steps = [], queue = null, timer = null, preview = null;
    $("elim-total").textContent = String(intermediates.length);
    const buttons = $("elim-orders");
    Object.keys(E.orders).forEach((name) => {
      const b = el("button", { "data-order": name, id: "play-" + name }, name + " (" + E.orders[name].multiplications + " mult.)");
      b.addEventListener("click", () => play(name));
      buttons.appendChild(b);
    });
    if (intermediates.length > E.optimal_limit) buttons.appendChild(el("span", { class: "note" }, "(optimal: only for up to " + E.optimal_limit + " intermediates)"));
    const alive = (v) => work.pred[v] !== null;
    const totals = () => steps.reduce((t, s) => [t[0] + s.multiplications, t[1] + s.additions], [0, 0]);
    function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
    function check(step) {
      // compare with the step minirad recorded when it eliminated in this order
      if (!queue) return;
      const theirs = E.orders[queue.name].steps[steps.length - 1];
      const names = (pairs) => pairs.map(([p, s]) => [G.names[p], G.names[s]]);
      const agree = theirs.vertex === G.names[step.vertex] && theirs.multiplications === step.multiplications
        && theirs.additions === step.additions && same(theirs.fill_in, names(step.fillIn))
        && same(theirs.updated, names(step.updated)) && same(theirs.fill_in_labels, step.fillInLabels)
        && same(theirs.updated_labels, step.updatedLabels);
      const line = $("elim-check");
      if (agree) {
        line.className = "note ok";
        line.textContent = "✓ step " + steps.length + " is the step minirad.eliminate(g, '" + queue.name + "') records: same fill-in, same partials, same counts";
      } else {
        line.className = "bad";
        line.textContent = "✗ step " + steps.length + " differs from minirad.eliminate's";
        console.error("minirad explore: the page's elimination step differs from minirad's", theirs, step);
      }
    }
    function doStep(v) {
      history.push(copyWorking(work));
      const step = eliminateStep(work, v);
      steps.push(step);
      check(step);
      status();
    }
    function stop() { if (timer !== null) { clearInterval(timer); timer = null; } }
    function play(name) {
      stop();
      reset(false);
      queue = { name, order: E.orders[name].order.map((x) => G.names.indexOf(x)), next: 0 };
      timer = setInterval(() => { if (!advance()) stop(); }, 900);
      status();
    }
    function advance() {
      if (!queue || queue.next >= queue.order.length) return false;
      doStep(queue.order[queue.next++]);
      redraw();
      return queue.next < queue.order.length;
    }
    function reset(andStatus) {
      work = freshWorking(); history = []; steps = []; queue = null;
      $("elim-check").textContent = "";
      if (andStatus !== false) status();
    }
    $("elim-step").addEventListener("click", () => { stop(); advance(); });
    $("elim-pause").addEventListener("click", () => { stop(); status(); });
    $("elim-undo").addEventListener("click", () => {
      stop();
      if (!history.length) return;
      work = history.pop();
      steps.pop();
      if (queue) queue.next = Math.max(0, queue.next - 1);
      status();
      redraw();
    });
    $("elim-reset").addEventListener("click", () => { stop(); reset(); redraw(); });
    function status() {
      const [mults, adds] = totals();
      $("elim-mults").textContent = String(mults);
      $("elim-adds").textContent = String(adds);
      $("elim-done").textContent = String(steps.length);
      $("elim-step").disabled = !queue || queue.next >= queue.order.length;
      $("elim-pause").disabled = timer === null;
      $("elim-undo").disabled = !history.length;
      const log = $("elim-log");
      clear(log);
      steps.forEach((s, i) => {
        const text = "eliminate " + G.names[s.vertex] + ": " + s.predecessors.length + "×" + s.successors.length + " = "
          + s.multiplications + " multiplication" + (s.multiplications === 1 ? "" : "s") + ", " + s.additions + " addition" + (s.additions === 1 ? "" : "s")
          + (s.fillIn.length ? "; fill-in " + s.fillIn.map(([p, q]) => edgeName(p, q)).join(", ") : "")
          + (s.updated.length ? "; updated " + s.updated.map(([p, q]) => edgeName(p, q)).join(", ") : "");
        log.appendChild(el("li", { id: "elim-step-" + (i + 1) }, text));
      });
      const box = $("elim-jacobian");
      clear(box);
      if (steps.length === intermediates.length) {
        box.appendChild(el("h3", {}, "The bipartite graph left is the Jacobian"));
        const t = el("table", { id: "elim-jacobian-table" });
        const rows = G.outputs.map((y, i) => [G.names[y]].concat(G.inputs.map((x, j) => {
          const value = work.pred[y].has(x) ? work.pred[y].get(x) : 0;
          return { id: "jac-" + i + "-" + j, text: fmt(value, 8) };
        })));
        table(t, [""].concat(G.inputs.map((x) => G.names[x])), rows);
        box.append(t, el("p", { class: "note" }, "minirad.jacobian(g): " + D.exact.jacobian.map((x) => fmt(x, 8)).join(", ")));
      }
    }
    status();
    return {
      activate(v) {
        if (G.kinds[v] !== "intermediate" || !alive(v)) return;
        stop();
        queue = null;
        $("elim-check").textContent = "";
        doStep(v);
        preview = null;
        redraw();
      },
      hover(v) {
        preview = v !== null && G.kinds[v] === "intermediate" && alive(v) ? v : null;
        $("elim-preview").textContent = preview === null ? "" : "eliminating " + G.names[preview] + " costs "
          + work.pred[preview].size + " × " + work.succ[preview].size + " = " + work.pred[preview].size * work.succ[preview].size + " multiplications";
      },
      view() {
        const last = steps[steps.length - 1];
        const fresh = new Set(last ? last.fillIn.map(([p, s]) => p + ">" + s) : []);
        const changed = new Set(last ? last.updated.map(([p, s]) => p + ">" + s) : []);
        const edges = [];
        for (let v = 0; v < n; v++) {
          if (!alive(v)) continue;
          for (const [u, d] of work.pred[v]) {
            const key = u + ">" + v;
            let cls = fresh.has(key) ? "fillin" : changed.has(key) ? "updated" : "";
            if (preview !== null && (u === preview || v === preview)) cls = "step";
            edges.push({ u, v, label: fmt(d, 4), cls });
          }
        }
        if (preview !== null) {
          for (const p of work.pred[preview].keys()) for (const s of work.succ[preview].keys()) {
            if (!work.pred[s].has(p)) edges.push({ u: p, v: s, label: "", cls: "preview" });
          }
        }
        if (last) {
          last.predecessors.forEach((p) => edges.push({ u: p, v: last.vertex, label: "", cls: "removed" }));
          last.successors.forEach((s) => edges.push({ u: last.vertex, v: s, label: "", cls: "removed" }));
        }
        const vertexClass = {}, aria = {};
        for (let v = 0; v < n; v++) {
          if (G.kinds[v] === "intermediate" && alive(v)) { vertexClass[v] = "clickable"; aria[v] = G.names[v] + ", intermediate: press Enter to eliminate it"; }
        }
        if (last) vertexClass[last.vertex] = "skipped";
        const hidden = {};
        for (let v = 0; v < n; v++) if (!alive(v) && (!last || v !== last.vertex)) hidden[v] = true;
        return {
          edges, vertexClass, aria, hidden,
          legend: [["#E69F00 dotted", "edges of the last vertex eliminated (removed)"], ["#CC79A7 dashed", "fill-in: created"],
            ["#009E73", "updated: product added"], ["#E69F00", "edges of the vertex under the pointer"]],
        };
      },
    };
  })();

  // ------------------------------------------------------------ Paths
  modes.paths = (function () {
    const P = D.paths;
    if (!P || P.unavailable) { $("path-count").textContent = P ? P.unavailable : ""; return { view: () => ({ edges: originalEdges((e) => fmt(G.labels[e], 4)) }) }; }
    const select = $("path-entry");
    P.entries.forEach((entry, i) => select.appendChild(el("option", { value: String(i) }, entry.name)));
    let chosen = null;  // a path number, or null for all listed
    function list() {
      const entry = P.entries[Number(select.value)];
      $("path-count").textContent = entry.count + " path" + (entry.count === "1" ? "" : "s") + " (minirad.count_paths)"
        + (entry.complete ? "" : "; the first " + entry.paths.length + " are listed");
      const box = $("path-list");
      clear(box);
      entry.paths.forEach((path, i) => {
        const b = el("button", { "aria-pressed": chosen === i ? "true" : "false", id: "path-" + i },
          path.map((v) => G.names[v]).join(" → ") + ": product " + (P.blocks ? "a block " + entry.products[i] : fmt(entry.products[i])));
        b.addEventListener("click", () => { chosen = chosen === i ? null : i; list(); redraw(); });
        const li = el("li");
        li.appendChild(b);
        box.appendChild(li);
      });
      $("path-sum").textContent = P.blocks
        ? "the sum of the " + (entry.complete ? "" : "listed ") + "products is a block " + entry.shape + " of norm " + fmt(entry.listed_sum, 8)
          + "; the block " + entry.name + " of the Jacobian (reverse sweep) has norm " + fmt(entry.exact, 8) + "; the norm of their difference is " + fmt(entry.difference, 3)
        : (entry.complete ? "sum of the products of all " : "sum of the products of the " + entry.paths.length + " listed: ")
          + (entry.complete ? entry.paths.length + " paths: " : "") + fmt(entry.listed_sum, 8) + "; the entry " + entry.name + " = " + fmt(entry.exact, 8) + " (reverse sweep)";
    }
    select.addEventListener("change", () => { chosen = null; list(); redraw(); });
    list();
    return {
      view() {
        const entry = P.entries[Number(select.value)];
        const shown = chosen === null ? entry.paths.map((p, i) => i) : [chosen];
        const onPath = new Map();
        shown.forEach((i) => {
          const p = entry.paths[i];
          for (let j = 0; j + 1 < p.length; j++) onPath.set(p[j] + ">" + p[j + 1], i);
        });
        const edges = originalEdges((e) => (P.blocks ? G.labels[e] : fmt(G.labels[e], 4)), (e) => (onPath.has(G.sources[e] + ">" + G.targets[e]) ? "used" : "dim"));
        const vertexClass = {};
        if (chosen !== null) entry.paths[chosen].forEach((v) => { vertexClass[v] = "reached"; });
        return { edges, vertexClass, legend: [["#0072B2", chosen === null ? "edges on the listed paths" : "the chosen path"], ["#b0b0b0 dashed", "other edges"]] };
      },
    };
  })();

  // ------------------------------------------------------------ Sample
  modes.sample = (function () {
    const S = D.sample;
    if (!S || S.unavailable) { $("single-status").textContent = S ? S.unavailable : ""; return { view: () => ({ edges: originalEdges((e) => fmt(G.labels[e], 4)) }) }; }
    const kSelect = $("sample-k"), seedSelect = $("sample-seed"), entrySelect = $("sample-entry"), insideSelect = $("sample-inside");
    const ks = [...new Set(S.menu.map((c) => c.k))], seeds = [...new Set(S.menu.map((c) => c.seed))];
    const insides = [...new Set(S.menu.map((c) => String(c.entries)))];
    ks.forEach((k) => kSelect.appendChild(el("option", { value: String(k) }, String(k))));
    seeds.forEach((s) => seedSelect.appendChild(el("option", { value: String(s) }, String(s))));
    insides.forEach((m) => insideSelect.appendChild(el("option", { value: m }, m === "null" ? "all (first level only)" : m)));
    $("sample-inside-choice").hidden = D.kind !== "arrays";
    S.entries.forEach((name, i) => entrySelect.appendChild(el("option", { value: String(i) }, name)));
    let run = 0, drawn = 0;
    const current = () => S.menu.find((c) => String(c.k) === kSelect.value && String(c.seed) === seedSelect.value
      && String(c.entries) === (D.kind === "arrays" ? insideSelect.value : String(c.entries)));
    const insideText = (c) => (c.entries === null || c.entries === undefined ? "" : ", entries=" + c.entries);
    function single() {
      const c = current(), s = c.singles[run];
      $("single-status").textContent = "run " + (run + 1) + " of " + c.singles.length + ": stores " + s.edges_stored + " of " + m + " edges and "
        + s.vertices_stored + " of " + n + " vertices; estimate " + S.entries.map((name, i) => name + " = " + fmt(s.estimate[i])).join(", ")
        + " (exact " + S.exact.map((x) => fmt(x)).join(", ") + "). minirad.sample_paths(g, " + c.k + ", rng=rng" + insideText(c) + ") called " + (run + 1)
        + " time" + (run ? "s" : "") + " on rng = numpy.random.default_rng(" + c.seed + ").";
      $("single-prev").disabled = run === 0;
      $("single-next").disabled = run + 1 >= c.singles.length;
    }
    function plot(node, series, band, exact, label, nonnegative) {
      clear(node);
      const W = 360, H = 150, left = 52, right = 10, top = 24, bottom = 22;
      node.setAttribute("viewBox", "0 0 " + W + " " + H);
      const c = current(), N = c.n;
      const finite = (x) => typeof x === "number";
      // an axis label fits the margin: 1.3e40, not 13000000000000000000000000000000000000000
      const tick = (x) => Math.abs(x) >= 1e5 || (x !== 0 && Math.abs(x) < 1e-3)
        ? x.toExponential(1).replace("e+", "e") : fmt(x, 3);
      const values = [];
      series.forEach((y, i) => { if (finite(y)) values.push(y); if (band && finite(band[i]) && finite(y)) values.push(y - 2 * band[i], y + 2 * band[i]); });
      values.splice(0, values.length, ...values.filter(Number.isFinite));  // y ± 2 band may overflow
      if (finite(exact)) values.push(exact);
      // the range is worked out in units of the largest |value|, so that neither a
      // value near the largest double (its range overflows) nor one range of a single
      // large value (widening 1e40 by 1 leaves it one number) makes a coordinate NaN
      const unit = Math.max(0, ...values.map(Math.abs)) || 1;
      let lo = Math.min(...values) / unit, hi = Math.max(...values) / unit;
      if (!values.length) { lo = 0; hi = 1; }
      if (hi - lo < 1e-12) { lo -= 0.5; hi += 0.5; }
      const pad = (hi - lo) * 0.06; lo -= pad; hi += pad;
      if (nonnegative) lo = Math.max(lo, 0);  // a variance: the axis starts at 0 at the lowest
      const X = (i) => left + (W - left - right) * (N > 1 ? i / (N - 1) : 0);
      const Y = (y) => top + (H - top - bottom) * (1 - (y / unit - lo) / (hi - lo));
      node.append(svgEl("line", { class: "axis", x1: left, y1: H - bottom, x2: W - right, y2: H - bottom }),
        svgEl("line", { class: "axis", x1: left, y1: top, x2: left, y2: H - bottom }),
        svgEl("text", { x: left - 4, y: top + 4, "text-anchor": "end" }, tick(hi * unit)),
        svgEl("text", { x: left - 4, y: H - bottom, "text-anchor": "end" }, tick(lo * unit)),
        svgEl("text", { x: left, y: H - 6 }, "1"), svgEl("text", { x: W - right, y: H - 6, "text-anchor": "end" }, String(N) + " estimates"),
        svgEl("text", { x: left, y: 12 }, label));
      if (band) {
        const up = [], down = [];
        series.forEach((y, i) => { if (finite(y) && finite(band[i]) && Number.isFinite(y + 2 * band[i]) && Number.isFinite(y - 2 * band[i])) { up.push([X(i), Y(y + 2 * band[i])]); down.push([X(i), Y(y - 2 * band[i])]); } });
        if (up.length) node.appendChild(svgEl("polygon", { class: "band", points: up.concat(down.reverse()).map((p) => p.map((q) => q.toFixed(1)).join(",")).join(" ") }));
      }
      if (finite(exact)) node.appendChild(svgEl("line", { class: "exact", x1: left, x2: W - right, y1: Y(exact), y2: Y(exact) }));
      const pts = [];
      series.forEach((y, i) => { if (finite(y)) pts.push(X(i).toFixed(1) + "," + Y(y).toFixed(1)); });
      if (pts.length) node.appendChild(svgEl("polyline", { class: "series", points: pts.join(" ") }));
    }
    function many() {
      const c = current(), j = Number(entrySelect.value);
      const exactVariance = typeof c.exact_variance === "string" ? null : c.exact_variance;
      const col = (rows) => rows.slice(0, drawn).map((r) => r[j]);
      plot($("mean-plot"), col(c.mean), col(c.stderr), S.exact[j], "running mean ± 2 standard errors; dashed: exact");
      plot($("variance-plot"), col(c.variance), null, exactVariance ? exactVariance[j] : null, "sample variance; dashed: exact variance", true);
      const i = drawn - 1;
      const rows = S.entries.map((name, e) => [name,
        { id: "sample-last-" + e, text: drawn ? fmt(c.estimates[i][e]) : "–" },
        { id: "sample-mean-" + e, text: drawn ? fmt(c.mean[i][e]) : "–" },
        { id: "sample-stderr-" + e, text: drawn > 1 ? fmt(c.stderr[i][e], 3) : "–" },
        { id: "sample-exact-" + e, text: fmt(S.exact[e]) },
        { id: "sample-variance-" + e, text: exactVariance ? fmt(exactVariance[e], 4) : "–" }]);
      table($("sample-table"), ["entry", "last estimate", "mean of " + drawn, "std. error", "exact", "exact variance"], rows);
      $("sample-note").textContent = "On rng = numpy.random.default_rng(" + c.seed + "): estimates 1 to " + c.runs + " are the runs of minirad.sample_paths(g, " + c.k + ", rng=rng" + insideText(c) + ") above, in order"
        + (c.n > c.runs ? "; estimates " + (c.runs + 1) + " to " + c.n + " are minirad.sampled_jacobians(g, " + c.k + ", " + (c.n - c.runs) + ", rng=rng" + insideText(c) + ") on the same generator afterwards (the same law, drawn in batches)" : "")
        + (S.all_entries > S.entries.length ? " (the first " + S.entries.length + " of " + S.all_entries + " entries)" : "")
        + "; exact variance: minirad.path_sampling_variance(g, " + c.k + ")" + (exactVariance ? "" : ": " + c.exact_variance) + ".";
      $("draw-1").disabled = $("draw-10").disabled = $("draw-all").disabled = drawn >= c.n;
    }
    function draw(count) { drawn = Math.min(current().n, drawn + count); many(); }
    $("draw-1").addEventListener("click", () => draw(1));
    $("draw-10").addEventListener("click", () => draw(10));
    $("draw-all").addEventListener("click", () => draw(current().n));
    $("draw-reset").addEventListener("click", () => { drawn = 0; many(); });
    $("single-next").addEventListener("click", () => { run += 1; single(); redraw(); });
    $("single-prev").addEventListener("click", () => { run -= 1; single(); redraw(); });
    const changed = () => { run = 0; drawn = 0; single(); many(); redraw(); };
    kSelect.addEventListener("change", changed);
    seedSelect.addEventListener("change", changed);
    insideSelect.addEventListener("change", changed);
    entrySelect.addEventListener("change", many);
    single();
    many();
    return {
      view() {
        const s = current().singles[run];
        const drawnEdge = new Map(s.edges.map((e, i) => [e, i]));
        const weight = (e) => (D.kind === "arrays" ? "× " + fmt(s.weights[drawnEdge.get(e)], 4) : "w = " + fmt(s.weights[drawnEdge.get(e)], 4));
        const edges = originalEdges((e) => (drawnEdge.has(e) ? "draws " + s.counts[drawnEdge.get(e)] + ", " + weight(e) : (D.kind === "arrays" ? G.labels[e] : fmt(G.labels[e], 4))),
          (e) => (drawnEdge.has(e) ? "sampled" : "dim"));
        const vertexClass = {};
        s.skipped.forEach((v) => { vertexClass[v] = "skipped"; });
        const grids = s.inside || {};
        const legend = [["#D55E00", D.kind === "arrays" ? "drawn edges: draw count and the factor on the block" : "drawn edges: draw count and weight in the sampled graph"], ["#b0b0b0 dashed", "edges not drawn"]];
        if (Object.keys(grids).length) legend.push(["#D55E00", "beside an array: the entries it keeps (second level)"]);
        return { edges, vertexClass, legend, grids };
      },
    };
  })();

  // ------------------------------------------------------------ Memory
  modes.memory = (function () {
    const M = D.memory;
    if (!M) return { view: () => ({ edges: originalEdges() }) };
    const slider = $("memory-slider");
    slider.max = String(M.steps.length - 1);
    slider.value = "0";
    if (!M.sampled.length) {  // nothing to sample: a slider would do nothing
      $("memory-slider-line").hidden = true;
      $("memory-fraction").textContent = "";
    }
    const bytes = (x) => (Number.isInteger(x) ? x.toLocaleString("en-US") : x.toLocaleString("en-US", { maximumFractionDigits: 1 })) + " B";
    function update() {
      const s = M.steps[Number(slider.value)], full = M.steps[0];
      const text = s.fraction === null ? "no sampling (every activation kept)" : "f = " + s.fraction + " (k = " + s.ks.join(", ") + " per row on the sampled edges)";
      $("memory-fraction").textContent = text;
      slider.setAttribute("aria-valuetext", text);
      $("memory-total").innerHTML = "";
      $("memory-total").append(el("span", { id: "memory-bytes" }, bytes(s.total)), " of " + bytes(full.total) + " kept when nothing is sampled (minirad.retained_memory"
        + (s.fraction === null ? "(g))" : "(sample_activations(g, " + s.fraction + ", rng=" + M.seed + ")))"));
      const box = $("memory-variance");
      clear(box);
      if (s.variance === null) box.textContent = "not computed: " + M.variance_note;
      else {
        const list = el("ul");
        M.input_names.forEach((name, i) => list.appendChild(el("li", { id: "memory-variance-" + i },
          name + ": " + fmt(s.variance[i], 4) + (M.gradient_squared ? " (|gradient|² = " + fmt(M.gradient_squared[i], 4) + ")" : ""))));
        box.append(el("span", {}, "summed over the entries of each gradient:"), list);
      }
      const rows = G.sources.map((u, e) => [edgeName(u, G.targets[e]), G.labels[e], { id: "memory-edge-" + e, text: bytes(s.per_edge[e]) }, bytes(full.per_edge[e]), M.notes[e] || ""]);
      table($("memory-table"), ["edge", "operator", "keeps now", "keeps unsampled", "why nothing"], rows);
      $("memory-note").textContent = M.sampled.length
        ? "Sampled edges (dashed): the " + M.sampled.length + " edges that keep an activation for a weight gradient, as minirad.sample_activations chooses them."
        : "No edge of this graph keeps an activation for a weight gradient (a product with a stored array), so minirad.sample_activations has nothing to sample: every kept fraction keeps what the graph keeps now.";
      redraw();
    }
    slider.addEventListener("input", update);
    update();
    return {
      view() {
        const s = M.steps[Number(slider.value)];
        const sampled = new Set(M.sampled);
        const edges = originalEdges((e) => bytes(s.per_edge[e]), (e) => (sampled.has(e) && s.fraction !== null ? "sampled injected" : ""));
        return { edges, legend: [["#D55E00 dashed", "sampled activation edges"]] };
      },
    };
  })();

  // ------------------------------------------------------------ start
  const available = D.kind === "scalars" ? ["exact", "eliminate", "paths", "sample"] : ["exact", "eliminate", "paths", "sample", "memory"];
  tabs.forEach((tab) => { tab.hidden = !available.includes(tab.dataset.mode); });
  $("summary").textContent = n + " vertices, " + m + " edges; laid out by " + (L.engine === "dot" ? "graphviz dot" : "minirad's own layout (graphviz dot not installed)")
    + (D.kind === "arrays" ? "; a graph of arrays: each vertex is an array, each edge a Jacobian block, and every panel works on the blocks (minirad.scalarize(g) gives the graph of numbers)" : "");
  const wanted = (location.hash || "").slice(1);
  setMode(available.includes(wanted) ? wanted : "exact");

  window.miniradExplore = { data: D, eliminateStep, freshWorking, setMode };
})();
