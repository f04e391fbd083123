// The ContextGraph dashboard: draws the embedded snapshot at once, then (live) keeps it current from the
// server's event stream; every action goes through /dashboard/api/..., i.e. through the MCP tools' dispatcher.
"use strict";
(function () {
  const CG = window.CG;
  const $ = (id) => document.getElementById(id);
  const snapshot = JSON.parse($("snapshot").textContent);
  const SPACES = snapshot.spaces;
  const LIVE = snapshot.live;
  const TWO_PI = 2 * Math.PI;

  // -- small DOM helpers -----------------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }
  function fill(target, ...children) {
    target.textContent = "";
    for (const c of children.flat(Infinity)) if (c) target.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
  function numberText(v) {
    if (v === null || v === undefined || typeof v === "boolean") return "–";
    return String(v);
  }
  function fixed(v, d) { return (v === null || v === undefined || !Number.isFinite(Number(v))) ? "–" : Number(v).toFixed(d === undefined ? 3 : d); }
  function when(t) { return t ? new Date((typeof t === "number" ? t * 1000 : t)).toLocaleString() : "–"; }
  function preview(text, n) { text = (text || "").replace(/\s+/g, " "); return text.length > n ? text.slice(0, n - 1) + "…" : text; }
  function dl(pairs) { return el("dl", {}, pairs.filter((p) => p).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])); }
  function errorText(err) {
    const e = err && err.body && err.body.error;
    return e ? `${e.message} (code ${e.code})` + (e.data && e.data.hint ? ` ${e.data.hint}` : "") : String(err && err.message || err);
  }

  async function api(path, options) {
    const response = await fetch("/dashboard/api/" + path, Object.assign({ credentials: "same-origin",
      headers: { accept: "application/json" } }, options || {}));
    let body = null;
    try { body = await response.json(); } catch (_e) { body = { error: { code: response.status, message: response.statusText } }; }
    // a 401 is an OAuth error (RFC 6750): {error: "invalid_token", error_description: "..."}
    if (body && typeof body.error === "string") body = { error: { code: response.status, message: body.error_description || body.error } };
    if (!response.ok) { const err = new Error((body.error && body.error.message) || response.statusText); err.body = body; err.status = response.status; throw err; }
    return body;
  }
  function post(path, payload) {
    return api(path, { method: "POST", body: JSON.stringify(payload),
                       headers: { accept: "application/json", "content-type": "application/json" } });
  }

  // -- Now ---------------------------------------------------------------------------------------------------
  const osc = { phases: null, K: 0 };

  function setMetric(name, value) {
    for (const node of document.querySelectorAll(`[data-metric="${name}"]`)) {
      node.textContent = numberText(value);
      node.dataset.value = numberText(value);
    }
  }

  function renderNow(now) {
    if (now.error) { $("live-status").textContent = now.error.message; $("live-status").dataset.state = "error"; return; }
    $("live-status").dataset.state = LIVE ? "live" : "snapshot";
    const m = now.metrics;
    // the memories changed since the last push (stored, merged, forgotten elsewhere): the lists follow
    if (osc.memoryCount !== undefined && osc.memoryCount !== m.memory_count) {
      Promise.all([api("recent"), api("curation")]).then(([recent, curation]) => { renderRecent(recent); renderCuration(curation); })
        .catch((err) => console.error("refresh", err));
    }
    osc.memoryCount = m.memory_count;
    for (const name of ["memory_count", "edge_count", "entropy", "coherence", "learning_score", "kuramoto_r"]) setMetric(name, m[name]);
    m.oscillators.forEach((phase, i) => {
      const node = document.querySelector(`[data-oscillator="${i + 1}"]`);
      if (node) { node.textContent = numberText(phase); node.dataset.value = numberText(phase); }
    });
    const k = now.kuramoto;
    osc.phases = k.phases.slice(); osc.K = k.coupling;
    osc.serverR = k.r; osc.serverPsi = k.psi;
    drawKuramoto();

    $("now-at").textContent = `the server's numbers at ${new Date(now.at * 1000).toLocaleTimeString()}` +
      (LIVE ? "; the oscillators move only with memory operations (the agent's clock), so they hold between pushes" : "");
    const pulse = now.pulse, memetic = now.memetic, c = now.consciousness;
    fill($("pulse-box"), el("h3", {}, "Pulse"), dl([
      ["Quadrant", el("span", { class: "badge q-" + String(pulse.quadrant).toLowerCase(), "data-field": "quadrant" }, pulse.quadrant)],
      ["Suggested action", el("code", { "data-field": "suggested_action" }, pulse.suggested_action)],
      ["Lifecycle", `${memetic.phase}` + (now.lifecycle ? ` (λS ${now.lifecycle.lambda_s}, λC ${now.lifecycle.lambda_c})` : "")],
      ["Consolidation", memetic.utl.consolidationPhase],
    ]));
    fill($("consciousness-box"), el("h3", {}, "Consciousness C = I·R·D"), dl([
      ["C", el("span", { "data-field": "C" }, fixed(c.C, 4))], ["I (sync r)", fixed(c.I, 4)],
      ["R (meta-cognition)", fixed(c.R, 4)], ["D (differentiation)", fixed(c.D, 4)],
      ["State", el("span", { class: "badge state-" + String(c.state).toLowerCase(), "data-field": "consciousness_state" }, c.state)],
      ["Identity", `${fixed(c.identity.continuity, 3)} (${c.identity.status})`],
    ]));
    const idx = now.indexes || {};
    fill($("indexes-box"), el("h3", {}, "Indexes"),
      el("table", { class: "data compact", id: "index-sizes" }, el("tbody", {}, Object.entries(idx).map(([space, size]) => {
        const known = SPACES.find((sp) => String(sp.id) === String(space));
        return el("tr", { title: known ? known.name : space }, el("td", {}, known ? `E${known.id}` : space),
          el("td", { class: "num" }, typeof size === "object" ? JSON.stringify(size) : size));
      }))),
      now.store_bytes !== undefined && now.store_bytes !== null ? el("p", { class: "note" }, `store: ${(now.store_bytes / 1024).toFixed(0)} KiB`) : null);
    renderWorkspace(now.workspace);
    renderNeuromodulation(now.neuromodulation);
    renderOptional($("dream-box"), "Dream", now.dream);
  }

  function renderWorkspace(w) {
    const active = w.active_memory;
    fill($("workspace-box"), el("h3", {}, "Global workspace"), dl([
      ["Active memory", active ? [memoryLink(active.memory_id), ` r_m ${fixed(active.r, 3)}, score ${fixed(active.score, 3)}`,
        active.seconds_in_workspace !== null ? `, ${fixed(active.seconds_in_workspace, 1)} s in` : ""] : "none"],
      ["Broadcasting", w.is_broadcasting ? `yes (${fixed(w.broadcast_remaining_ms, 0)} ms left)` : "no"],
      ["Empty for", active || w.empty_for_seconds === null || w.empty_for_seconds === undefined ? "–" : `${fixed(w.empty_for_seconds, 1)} s`],
      ["Counts", Object.entries(w.counts || {}).map(([k, v]) => `${k} ${v}`).join(", ")],
    ]),
    el("h4", {}, `Candidates of the last operation (enter at r_m ≥ ${w.coherence_threshold}, exit below ${w.exit_threshold})`),
    w.candidates.length ? el("table", { class: "data compact", id: "workspace-candidates" },
      el("thead", {}, el("tr", {}, ["memory", "r_m", "importance", "score", "eligible"].map((h) => el("th", {}, h)))),
      el("tbody", {}, w.candidates.map((cand) => el("tr", {}, el("td", {}, memoryLink(cand.memory_id)),
        el("td", { class: "num" }, fixed(cand.r, 3)), el("td", { class: "num" }, fixed(cand.importance, 2)),
        el("td", { class: "num" }, fixed(cand.score, 3)), el("td", {}, cand.eligible ? "yes" : "no")))))
      : el("p", { class: "note" }, "no candidates from the last operation"),
    el("h4", {}, "Recent events"),
    w.recent_events.length ? el("ol", { class: "events" }, w.recent_events.slice(-8).reverse().map((e) =>
      el("li", {}, `${e.kind} `, e.memory_id ? memoryLink(e.memory_id) : "", e.r !== undefined ? ` r ${fixed(e.r, 3)}` : "",
        e.at ? ` · ${when(e.at)}` : "")))
      : el("p", { class: "note" }, "no workspace events yet"));
  }

  // get_neuromodulation_state: each modulator's level on its [min, max] range, with the baseline it decays to
  function renderNeuromodulation(status) {
    const target = $("neuromodulation-box");
    // the modulators by name, under `modulators` or at the top level (the tool's shape has been both)
    const source = status && (status.modulators || status);
    const modulators = source ? Object.entries(source).filter(([_k, m]) => m && typeof m === "object" && typeof m.level === "number") : [];
    if (!status || !status.available || !modulators.length) { renderOptional(target, "Neuromodulators", status); return; }
    const rows = modulators.map(([name, m]) => {
      const span = (m.max - m.min) || 1, at = (v) => 4 + 152 * Math.min(Math.max((v - m.min) / span, 0), 1);
      const bar = CG.svg("svg", { viewBox: "0 0 160 14", class: "level-bar", "data-modulator": name });
      CG.svg("rect", { x: 4, y: 4, width: 152, height: 6, rx: 3, class: "level-track" }, bar);
      CG.svg("rect", { x: 4, y: 4, width: Math.max(at(m.level) - 4, 1), height: 6, rx: 3, class: "level-fill" }, bar);
      CG.svg("line", { x1: at(m.baseline), x2: at(m.baseline), y1: 1, y2: 13, class: "level-baseline" }, bar);
      return el("tr", { title: `${name} sets ${m.controls || "?"}; baseline ${m.baseline}, range ${m.min}–${m.max}` },
        el("td", {}, name), el("td", { class: "num", "data-level": name }, Number.isInteger(m.level) ? String(m.level) : String(Number(m.level.toPrecision(4)))), el("td", {}, bar));
    });
    fill(target, el("h3", {}, "Neuromodulators"), el("table", { class: "data compact" }, el("tbody", {}, rows)),
      el("p", { class: "note" }, status.at_baseline ? "all at their baselines" : `${(status.recent_changes || []).length} recent change(s)`));
  }

  function renderOptional(target, title, status) {
    if (!status || !status.available) {
      fill(target, el("h3", {}, title), el("p", { class: "note", "data-field": "unavailable" }, "not available" + (status && status.reason ? `: ${status.reason}` : "")));
      return;
    }
    const rows = Object.entries(status).filter(([k, v]) => !["available", "tool", "_cognitive_pulse"].includes(k) && v !== null && typeof v !== "object");
    const nested = Object.entries(status).filter(([k, v]) => v && typeof v === "object" && !Array.isArray(v) && k !== "_cognitive_pulse");
    fill(target, el("h3", {}, title), dl(rows.map(([k, v]) => [k.replace(/_/g, " "),
      typeof v === "number" && !Number.isInteger(v) ? fixed(v, 3) : String(v)])),
      nested.map(([k, v]) => el("details", {}, el("summary", {}, k), el("pre", {}, JSON.stringify(v, null, 1)))));
  }

  function drawKuramoto() {
    if (!osc.phases) return;
    const drawn = CG.drawOscillators($("kuramoto-svg"), osc.phases, SPACES);
    $("kuramoto-caption").textContent = `r = ${drawn.r.toFixed(3)}, ψ = ${drawn.psi.toFixed(3)} rad, K = ${osc.K}` + (LIVE ? " (live)" : " (snapshot)");
  }

  // -- History ---------------------------------------------------------------------------------------------
  function renderHistory(h) {
    const s = h.samples;
    CG.lineChart($("history-engine"), s.t, [
      { name: "entropy", values: s.entropy, cls: "s-entropy" }, { name: "coherence", values: s.coherence, cls: "s-coherence" },
      { name: "learning", values: s.learning_score, cls: "s-learning" }, { name: "r", values: s.r, cls: "s-r" },
    ], { ymin: 0, ymax: 1, empty: "no samples yet: the engine samples while tool calls come in" });
    CG.lineChart($("history-rates"), s.t, [
      { name: "stores/min", values: h.rates_per_minute.store, cls: "s-store" },
      { name: "searches/min", values: h.rates_per_minute.search, cls: "s-search" },
    ], { ymin: 0, empty: "no rates yet: two samples are needed" });
    CG.lineChart($("history-memories"), s.t, [{ name: "memories", values: s.memories, cls: "s-store" }],
      { ymin: 0, empty: "no samples yet" });
    const pct = Object.keys(h.calls.store.latency_ms);
    const windows = Object.keys(h.calls.store.per_minute);
    fill($("latency-table"), el("thead", {}, el("tr", {}, el("th", {}, "calls"), el("th", {}, "total"), el("th", {}, "errors"),
      pct.map((p) => el("th", {}, `${p} ms`)), windows.map((w) => el("th", {}, `per min (${w})`)))),
    el("tbody", {}, Object.entries(h.calls).map(([kind, v]) => el("tr", { "data-kind": kind }, el("td", {}, kind),
      el("td", { class: "num" }, v.total), el("td", { class: "num" }, v.errors),
      pct.map((p) => el("td", { class: "num" }, fixed(v.latency_ms[p], 1))), windows.map((w) => el("td", { class: "num" }, fixed(v.per_minute[w], 2)))))));
    $("history-note").textContent = `${h.sample_count} of at most ${h.max_samples} samples, one per ${h.sample_seconds} s at most; ` +
      `latency over the latest ${h.calls.search.latency_samples} searches and ${h.calls.store.latency_samples} stores.`;
  }

  // -- Memories --------------------------------------------------------------------------------------------
  function memoryLink(id, content) {
    if (!id) return "–";
    return el("a", { href: "#memories", class: "memory-link", "data-memory-id": id, onclick: (ev) => { ev.preventDefault(); openMemory(id); } },
      content ? preview(content, 70) : id.slice(0, 8));
  }

  function renderRecent(recent) {
    if (recent.error) { fill($("recent-list"), el("li", { class: "error" }, recent.error.message)); return; }
    fill($("recent-list"), recent.memories.length ? recent.memories.map((m) => el("li", { "data-memory-id": m.id },
      memoryLink(m.id, m.content), el("span", { class: "meta" }, ` · ${when(m.created_at)} · importance ${fixed(m.importance, 2)}`)))
      : [el("li", { class: "note" }, "no memories yet")]);
  }

  function renderSearch(result) {
    if (!result) return;
    if (result.error) { fill($("search-results"), el("p", { class: "error", "data-field": "search-error" }, errorText({ body: result }))); return; }
    const breakdown = result.results.some((r) => r.space_ranks);
    fill($("search-results"), el("p", { class: "note" }, `${result.count} result(s) for “${result.query}” from ${result.candidates ?? "–"} candidates`),
      el("table", { class: "data", id: "search-table" }, el("thead", {}, el("tr", {}, el("th", {}, "memory"), el("th", {}, "score"), el("th", {}, "similarity"),
        breakdown ? SPACES.map((s) => el("th", { class: "rank", title: s.name }, "E" + s.id)) : null)),
      el("tbody", {}, result.results.map((r) => el("tr", { "data-result-id": r.id }, el("td", {}, memoryLink(r.id, r.content)),
        el("td", { class: "num" }, fixed(r.score, 3)), el("td", { class: "num" }, fixed(r.similarity, 3)),
        breakdown ? SPACES.map((s) => { const rank = r.space_ranks ? r.space_ranks[s.name] : null;
          return el("td", { class: "num rank rank-" + (rank === null || rank === undefined ? "none" : Math.min(rank, 10)) }, rank ?? "–"); }) : null)))),
      result.stages_ms ? el("p", { class: "note" }, "stages (ms): " + Object.entries(result.stages_ms).map(([k, v]) => `${k} ${v}`).join(", ")) : null);
  }

  async function openMemory(id) {
    fill($("memory-page"), el("p", { class: "note" }, "loading…"));
    try { renderMemory(await api("memory/" + encodeURIComponent(id))); }
    catch (err) { fill($("memory-page"), el("p", { class: "error" }, errorText(err))); }
  }

  function renderMemory(page) {
    if (!page) return;
    if (page.error) { fill($("memory-page"), el("p", { class: "error" }, errorText({ body: page }))); return; }
    const m = page.memory, j = page.johari;
    fill($("memory-page"), el("h3", {}, "Memory ", el("code", { "data-field": "memory-id" }, m.node_id)),
      el("blockquote", { "data-field": "content" }, m.content),
      dl([["Tags", m.tags.length ? m.tags.map((t) => el("span", { class: "tag" }, t)) : "none"], ["Importance", el("span", { "data-field": "importance" }, fixed(m.importance, 3))],
        ["Modality", m.modality], ["Stored", when(m.created_at)], ["Session", m.session || "–"], ["Rationale", m.rationale || "–"]]),
      el("h4", {}, "Lineage"), el("ol", { class: "events" }, page.lineage.events.map((e) => el("li", {}, `${e.event} · ${when(e.at)}`,
        e.rationale ? ` · ${e.rationale}` : "", e.into ? [" → ", memoryLink(e.into)] : "",
        e.sources ? [" from ", e.sources.map((id) => [memoryLink(id), " "])] : ""))),
      el("h4", {}, `Neighbours (${page.neighbourhood.count})`),
      page.neighbourhood.count ? el("table", { class: "data compact" }, el("tbody", {}, page.neighbourhood.neighbors.map((n) => el("tr", {},
        el("td", {}, memoryLink(n.id, n.content)), el("td", {}, n.edge_type), el("td", { class: "num" }, fixed(n.weight, 3)), el("td", {}, n.direction)))))
        : el("p", { class: "note" }, "no neighbours (an orphan)"),
      el("h4", {}, `Johari window per space (dominant: ${j.dominant_quadrant || j.dominant || "–"})`),
      el("table", { class: "data compact", id: "johari-table" }, el("thead", {}, el("tr", {}, ["space", "ΔS", "ΔC", "quadrant", "confidence"].map((h) => el("th", {}, h)))),
        el("tbody", {}, j.per_space.map((s) => el("tr", {}, el("td", {}, `${s.space} ${s.name}`), el("td", { class: "num" }, fixed(s.delta_s, 3)),
          el("td", { class: "num" }, fixed(s.delta_c, 3)), el("td", {}, el("span", { class: "badge q-" + s.quadrant.toLowerCase() }, s.quadrant)),
          el("td", { class: "num" }, fixed(s.confidence, 3)))))));
    graph.reset(m.node_id, m.content);
    graph.add(m.node_id, page.neighbourhood.neighbors);
    $("graph-caption").textContent = `Neighbourhood of ${preview(m.content, 50)} (click a node to expand it)`;
  }

  async function expandNode(id) {
    try { graph.add(id, (await api("neighbourhood/" + encodeURIComponent(id))).neighbors); }
    catch (err) { $("graph-caption").textContent = errorText(err); }
  }
  const graph = new CG.GraphView($("graph-view"), $("graph-legend"), expandNode, (id) => openMemory(id));

  $("search-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = $("search-q").value.trim();
    if (!q) return;
    fill($("search-results"), el("p", { class: "note" }, "searching…"));
    try { renderSearch(await api(`search?q=${encodeURIComponent(q)}&breakdown=${$("search-breakdown").checked ? 1 : 0}`)); }
    catch (err) { renderSearch(err.body || { error: { code: 0, message: String(err) } }); }
  });

  // -- Curation --------------------------------------------------------------------------------------------
  function ask(title, what, extra) {
    const dialog = $("rationale-dialog");
    $("rationale-title").textContent = title;
    $("rationale-what").textContent = what;
    fill($("rationale-extra"), extra || []);
    $("rationale-text").value = "";
    $("rationale-error").textContent = "";
    dialog.showModal();
    return dialog;
  }

  function curationMessage(text, isError) {
    const node = $("curation-message");
    node.textContent = text;
    node.className = "message" + (isError ? " error" : " ok");
  }

  // Runs the action with the dialog's rationale; a refusal (too short, incompatible priors, …) stays in the
  // dialog with the dispatcher's message so it can be corrected.
  function confirmWith(dialog, run) {
    const form = $("rationale-form");
    const onSubmit = async (ev) => {
      ev.preventDefault();
      try {
        const out = await run($("rationale-text").value);
        form.removeEventListener("submit", onSubmit);
        dialog.close();
        curationMessage(out);
        await refreshAfterChange();
      } catch (err) { $("rationale-error").textContent = errorText(err); }
    };
    form.addEventListener("submit", onSubmit);
    $("rationale-cancel").onclick = () => { form.removeEventListener("submit", onSubmit); dialog.close(); };
  }

  function mergeDialog(ids, memories) {
    const first = memories[ids[0]] || {};
    const name = el("input", { id: "merge-target-name", type: "text", maxlength: 256, value: preview(first.content || "merged memory", 60) });
    const strategy = el("select", { id: "merge-strategy" }, ["summarize", "keep_highest", "concatenate"].map((s) => el("option", { value: s }, s)));
    const force = el("input", { id: "merge-force", type: "checkbox" });
    const dialog = ask("Merge near-duplicates (merge_concepts)", ids.map((id) => `• ${preview((memories[id] || {}).content || id, 90)}`).join("\n"),
      [el("label", {}, "Name of the merged memory ", name), el("label", {}, "Strategy ", strategy), el("label", {}, force, " force (link instead when priors disagree)")]);
    confirmWith(dialog, async (rationale) => {
      const out = await post("curation/merge", { source_node_ids: ids, target_name: name.value, merge_strategy: strategy.value, rationale, force_merge: force.checked });
      return out.merged ? `Merged ${ids.length} memories into ${out.merged_id} (undo: restore ${out.reversal_hash.slice(0, 12)}…)` : out.message;
    });
  }

  function forgetDialog(id, memories) {
    const reason = el("select", { id: "forget-reason" }, ["obsolete", "duplicate", "incorrect", "user_requested"].map((r) => el("option", { value: r }, r)));
    const dialog = ask("Forget (forget_concept, soft delete for 30 days)", preview((memories[id] || {}).content || id, 200), [el("label", {}, "Reason ", reason)]);
    confirmWith(dialog, async (rationale) => {
      const out = await post("curation/forget", { node_id: id, reason: reason.value, rationale });
      return `Forgot ${out.node_id}; restorable until ${out.recoverable_until}`;
    });
  }

  async function restore(hash) {
    try {
      const out = await post("curation/restore", { reversal_hash: hash });
      curationMessage(`Restored ${out.restored.length} memor${out.restored.length === 1 ? "y" : "ies"} (${out.operation} undone)`);
      await refreshAfterChange();
    } catch (err) { curationMessage(errorText(err), true); }
  }

  function renderCuration(c) {
    if (!c) return;
    if (c.error) { curationMessage(c.error.message, true); return; }
    const t = c.tasks, mem = c.memories;
    const content = (id) => (mem[id] ? preview(mem[id].content, 120) : id);
    fill($("duplicates"), t.duplicates.length ? t.duplicates.map((d) => el("div", { class: "task", "data-task": "duplicate", "data-ids": d.memories.join(",") },
      el("ul", {}, d.memories.map((id) => el("li", {}, memoryLink(id, content(id))))),
      el("span", { class: "meta" }, `similarity ${fixed(d.similarity, 3)} ≥ ${t.duplicate_threshold}`),
      el("button", { type: "button", class: "merge", onclick: () => mergeDialog(d.memories, mem) }, "Merge…")))
      : [el("p", { class: "note" }, `none among the ${t.window} newest memories`)]);
    fill($("orphans"), t.orphans.length ? t.orphans.map((id) => el("div", { class: "task", "data-task": "orphan", "data-ids": id },
      memoryLink(id, content(id)), el("button", { type: "button", class: "forget", onclick: () => forgetDialog(id, mem) }, "Forget…")))
      : [el("p", { class: "note" }, "none")]);
    // a conflict is the group of memories that passed the workspace threshold together in its last competition
    fill($("conflicts"), t.conflicts.length ? t.conflicts.map((group) => el("div", { class: "task", "data-task": "conflict", "data-ids": group.join(",") },
      el("ul", {}, group.map((id) => el("li", {}, memoryLink(id, content(id)), " ",
        el("button", { type: "button", class: "forget", onclick: () => forgetDialog(id, mem) }, "Forget…")))),
      group.length > 1 ? el("button", { type: "button", class: "merge", onclick: () => mergeDialog(group, mem) }, "Merge…") : null))
      : [el("p", { class: "note" }, "none in the workspace's last competition")]);
    const tombs = c.tombstones.tombstones;
    fill($("tombstones"), tombs.length ? el("table", { class: "data" }, el("thead", {}, el("tr", {}, ["memory", "deleted", "reason", "kind", "restorable until", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, tombs.map((tb) => el("tr", { "data-tombstone": tb.id }, el("td", {}, preview(tb.content || tb.preview || tb.id, 80)), el("td", {}, tb.deleted_at), el("td", {}, tb.reason),
        el("td", {}, tb.kind), el("td", {}, tb.recoverable_until),
        el("td", {}, el("button", { type: "button", class: "restore", onclick: () => restore(tb.reversal_hash) }, "Restore")))))) : el("p", { class: "note" }, "no tombstones in the recovery window"));
  }

  async function refreshAfterChange() {
    const [curation, recent, now] = await Promise.all([api("curation"), api("recent"), api("now")]);
    renderCuration(curation); renderRecent(recent); renderNow(now);
  }

  // -- start -----------------------------------------------------------------------------------------------
  function guarded(name, fn) { try { fn(); } catch (err) { console.error(name, err && err.stack ? err.stack : err); } }
  guarded("now", () => renderNow(snapshot.now));
  guarded("history", () => renderHistory(snapshot.history));
  guarded("recent", () => renderRecent(snapshot.recent));
  guarded("search", () => { if (snapshot.search) { $("search-q").value = snapshot.search.query || ""; renderSearch(snapshot.search); } });
  guarded("memory", () => renderMemory(snapshot.memory));
  guarded("curation", () => renderCuration(snapshot.curation));
  document.body.dataset.rendered = "1";
  window.__dashboardFirstRenderMs = performance.now();

  if (LIVE) {
    const status = $("live-status");
    let source = null;
    // Each push is a handful of tool calls (logged like any other): a tab nobody looks at closes its stream and
    // reopens it when shown again, so a forgotten tab does not fill the server's log ring.
    const open = () => {
      if (source) return;
      source = new EventSource("/dashboard/api/stream");
      source.addEventListener("open", () => { status.textContent = "live"; status.dataset.state = "live"; });
      source.addEventListener("error", () => { status.textContent = "reconnecting…"; status.dataset.state = "error"; });
      source.addEventListener("now", (ev) => guarded("now", () => renderNow(JSON.parse(ev.data))));
      source.addEventListener("history", (ev) => guarded("history", () => renderHistory(JSON.parse(ev.data))));
      source.addEventListener("problem", (ev) => { status.textContent = JSON.parse(ev.data).message; status.dataset.state = "error"; });
    };
    const close = () => { if (source) { source.close(); source = null; status.textContent = "paused (tab hidden)"; status.dataset.state = "paused"; } };
    document.addEventListener("visibilitychange", () => (document.visibilityState === "hidden" ? close() : open()));
    if (document.visibilityState !== "hidden") open();
  }
})();
