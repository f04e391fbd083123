// Small SVG drawing helpers for the dashboard (no library, no build step): line charts and the oscillator circle.
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, parent) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (parent) parent.appendChild(node);
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function clockTime(t) {
    const d = new Date(t * 1000);
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  // series: [{name, values (null = gap), cls}]; times: seconds since the epoch.
  function lineChart(target, times, series, opts) {
    opts = opts || {};
    clear(target);
    const W = 640, H = 220, L = 44, R = 10, T = 10, B = 28;
    const box = svg("g", { class: "chart-frame" }, target);
    const finite = series.flatMap((s) => s.values.filter((v) => v !== null && Number.isFinite(v)));
    if (!times.length || !finite.length) {
      svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" }, box).textContent =
        opts.empty || "no samples yet";
      return;
    }
    let ymin = opts.ymin !== undefined ? opts.ymin : Math.min(...finite, 0);
    let ymax = opts.ymax !== undefined ? opts.ymax : Math.max(...finite, 1);
    if (ymax <= ymin) ymax = ymin + 1;
    const t0 = times[0], t1 = times[times.length - 1] > t0 ? times[times.length - 1] : t0 + 1;
    const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
    const y = (v) => T + (1 - (v - ymin) / (ymax - ymin)) * (H - T - B);
    for (let i = 0; i <= 4; i++) {
      const v = ymin + ((ymax - ymin) * i) / 4;
      svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" }, box);
      svg("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end", class: "tick" }, box).textContent =
        Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2);
    }
    svg("text", { x: L, y: H - 8, class: "tick" }, box).textContent = clockTime(t0);
    svg("text", { x: W - R, y: H - 8, "text-anchor": "end", class: "tick" }, box).textContent = clockTime(t1);
    const legend = svg("g", { class: "legend" }, box);
    series.forEach((s, i) => {
      let d = "", pen = false, points = 0;
      s.values.forEach((v, j) => {
        if (v === null || !Number.isFinite(v)) { pen = false; return; }
        d += (pen ? "L" : "M") + x(times[j]).toFixed(1) + " " + y(v).toFixed(1);
        pen = true; points++;
      });
      if (d) svg("path", { d, class: "series " + s.cls }, box);
      if (points === 1 || times.length === 1) {  // a lone sample is a dot, not an invisible line
        s.values.forEach((v, j) => { if (v !== null && Number.isFinite(v)) svg("circle", { cx: x(times[j]), cy: y(v), r: 3, class: "dot " + s.cls }, box); });
      }
      const lx = L + 8 + i * 130;
      svg("rect", { x: lx, y: T, width: 12, height: 4, class: "swatch " + s.cls }, legend);
      svg("text", { x: lx + 16, y: T + 6, class: "tick" }, legend).textContent = s.name;
    });
  }

  function orderParameter(phases) {
    let c = 0, s = 0;
    for (const p of phases) { c += Math.cos(p); s += Math.sin(p); }
    c /= phases.length; s /= phases.length;
    let psi = Math.atan2(s, c);
    if (psi < 0) psi += 2 * Math.PI;
    return { r: Math.hypot(c, s), psi };
  }

  // One explicit Euler step of dθi/dt = ωi + K/N Σj sin(θj − θi): the network's own equation (gwt/kuramoto.py).
  function kuramotoStep(phases, omegas, K, dt) {
    const n = phases.length, out = new Array(n);
    for (let i = 0; i < n; i++) {
      let pull = 0;
      for (let j = 0; j < n; j++) pull += Math.sin(phases[j] - phases[i]);
      let p = phases[i] + dt * (omegas[i] + (K / n) * pull);
      p %= 2 * Math.PI;
      out[i] = p < 0 ? p + 2 * Math.PI : p;
    }
    return out;
  }

  function drawOscillators(target, phases, spaces) {
    clear(target);
    const R = 100;
    svg("circle", { cx: 0, cy: 0, r: R, class: "unit-circle" }, target);
    svg("line", { x1: -R - 8, x2: R + 8, y1: 0, y2: 0, class: "axis" }, target);
    svg("line", { y1: -R - 8, y2: R + 8, x1: 0, x2: 0, class: "axis" }, target);
    const { r, psi } = orderParameter(phases);
    phases.forEach((p, i) => {
      const g = svg("g", { class: "osc", "data-osc-dot": i + 1 }, target);
      const cx = R * Math.cos(p), cy = -R * Math.sin(p);
      svg("circle", { cx, cy, r: 7, class: "osc-dot hue" + (i % 13) }, g);
      svg("text", { x: cx * 1.18, y: -R * 1.18 * Math.sin(p) + 4, "text-anchor": "middle", class: "osc-label" }, g)
        .textContent = "E" + spaces[i].id;
    });
    svg("line", { x1: 0, y1: 0, x2: R * r * Math.cos(psi), y2: -R * r * Math.sin(psi), class: "order-arrow" }, target);
    svg("circle", { cx: R * r * Math.cos(psi), cy: -R * r * Math.sin(psi), r: 4, class: "order-head" }, target);
    return { r, psi };
  }

  window.CG = Object.assign(window.CG || {}, { svg, clear, lineChart, orderParameter, kuramotoStep, drawOscillators, clockTime });
})();
