// The neighbourhood graph view: typed, weighted edges around a memory; clicking a node expands its own
// neighbourhood. A small force layout (springs along edges, repulsion between nodes) placed in the SVG.
"use strict";
(function () {
  const TYPES = ["Semantic", "Temporal", "Causal", "Hierarchical", "Relational"];

  function GraphView(target, legend, onExpand, onOpen) {
    this.target = target;
    this.legend = legend;
    this.onExpand = onExpand;
    this.onOpen = onOpen;
    this.nodes = new Map();  // id → {id, label, x, y, vx, vy, expanded}
    this.edges = new Map();  // "a|b|type" → {a, b, type, weight}
  }

  GraphView.prototype.reset = function (center, label) {
    this.nodes.clear();
    this.edges.clear();
    this.center = center;
    this.nodes.set(center, { id: center, label, x: 0, y: 0, vx: 0, vy: 0, expanded: false, fixed: true });
  };

  // neighbours: get_neighborhood's list (id, content, via, edge_type, weight, effective_weight, direction)
  GraphView.prototype.add = function (from, neighbours) {
    const origin = this.nodes.get(from);
    if (origin) origin.expanded = true;
    neighbours.forEach((n, i) => {
      if (!this.nodes.has(n.id)) {
        const base = this.nodes.get(n.via) || origin || { x: 0, y: 0 };
        const angle = (2 * Math.PI * i) / Math.max(neighbours.length, 1) + 0.3;
        this.nodes.set(n.id, { id: n.id, label: n.content, x: base.x + 90 * Math.cos(angle),
                               y: base.y + 90 * Math.sin(angle), vx: 0, vy: 0, expanded: false });
      }
      const a = n.via || from, b = n.id, type = n.edge_type || "Semantic";
      const key = [a, b].sort().join("|") + "|" + type;
      if (!this.edges.has(key)) this.edges.set(key, { a, b, type, weight: Number(n.effective_weight ?? n.weight ?? 0),
                                                     direction: n.direction });
    });
    this.layout(300);
    this.draw();
  };

  GraphView.prototype.layout = function (iterations) {
    const nodes = [...this.nodes.values()], edges = [...this.edges.values()];
    for (let it = 0; it < iterations; it++) {
      const cool = 1 - it / iterations;
      for (const a of nodes) {
        for (const b of nodes) {
          if (a === b) continue;
          const dx = a.x - b.x, dy = a.y - b.y, d2 = Math.max(dx * dx + dy * dy, 25);
          a.vx += (1800 * dx) / d2; a.vy += (1800 * dy) / d2;
        }
      }
      for (const e of edges) {
        const a = this.nodes.get(e.a), b = this.nodes.get(e.b);
        if (!a || !b) continue;
        const dx = b.x - a.x, dy = b.y - a.y, d = Math.max(Math.hypot(dx, dy), 1);
        const rest = 70 + 80 * (1 - Math.min(Math.max(e.weight, 0), 1));  // stronger edges pull closer
        const f = 0.05 * (d - rest);
        a.vx += (f * dx) / d; a.vy += (f * dy) / d; b.vx -= (f * dx) / d; b.vy -= (f * dy) / d;
      }
      for (const n of nodes) {
        if (n.fixed) { n.vx = n.vy = 0; continue; }
        n.x += Math.max(-20, Math.min(20, n.vx * cool)); n.y += Math.max(-20, Math.min(20, n.vy * cool));
        n.x = Math.max(-300, Math.min(300, n.x)); n.y = Math.max(-185, Math.min(185, n.y));
        n.vx *= 0.5; n.vy *= 0.5;
      }
    }
  };

  GraphView.prototype.draw = function () {
    const { svg, clear } = window.CG;
    clear(this.target);
    const edgeLayer = svg("g", { class: "edges" }, this.target), nodeLayer = svg("g", { class: "nodes" }, this.target);
    for (const e of this.edges.values()) {
      const a = this.nodes.get(e.a), b = this.nodes.get(e.b);
      if (!a || !b) continue;
      const line = svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "edge edge-" + e.type.toLowerCase(),
                                 "stroke-width": (1 + 5 * Math.max(0, Math.min(1, e.weight))).toFixed(2),
                                 "data-edge-type": e.type, "data-weight": e.weight }, edgeLayer);
      svg("title", {}, line).textContent = `${e.type} ${e.direction || ""} weight ${e.weight.toFixed(3)}`;
      svg("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 3, "text-anchor": "middle", class: "edge-label" }, edgeLayer)
        .textContent = e.weight.toFixed(2);
    }
    for (const n of this.nodes.values()) {
      const g = svg("g", { class: "node" + (n.id === this.center ? " center" : "") + (n.expanded ? " expanded" : ""),
                           "data-node-id": n.id, tabindex: 0, role: "button" }, nodeLayer);
      svg("circle", { cx: n.x, cy: n.y, r: n.id === this.center ? 11 : 8 }, g);
      const text = (n.label || n.id).replace(/\s+/g, " ");
      svg("text", { x: n.x + 12, y: n.y + 4, class: "node-label" }, g).textContent = text.length > 28 ? text.slice(0, 27) + "…" : text;
      svg("title", {}, g).textContent = (n.expanded ? "click to open its page: " : "click to expand: ") + text;
      // first click: its neighbourhood joins the graph; a click on an expanded node opens the memory's page
      const expand = () => { if (n.expanded) this.onOpen(n.id); else this.onExpand(n.id); };
      g.addEventListener("click", expand);
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") expand(); });
    }
    if (this.legend) {
      this.legend.textContent = "";
      const present = new Set([...this.edges.values()].map((e) => e.type));
      for (const t of TYPES.filter((t) => present.has(t))) {
        const item = document.createElement("span");
        item.className = "legend-item edge-" + t.toLowerCase();
        item.textContent = t;
        this.legend.appendChild(item);
      }
      if (!present.size) this.legend.textContent = "no edges: this memory is an orphan";
    }
  };

  window.CG = Object.assign(window.CG || {}, { GraphView });
})();
