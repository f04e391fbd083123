"""Per-memory Johari classification (seed 001 P1-012): where one stored memory sits, space by space.

For the memory's fingerprint against its neighbours (the k nearest by E1, itself excluded), per space i:
    ΔSᵢ = 1 − mean similarity to the k nearest (kNN novelty, SPEC §8's default method)
    ΔCᵢ = 0.4·Connectivity + 0.4·ClusterFit + 0.2·Consistency (utl.delta_c) with
        Connectivity  mean similarity of those neighbours above the connectivity threshold
        ClusterFit    a local silhouette: the k nearest as the memory's cluster, the next k (ranks k+1..2k by
                      E1) as the nearest other group, distances 1 − similarity in space i. A space that agrees
                      with E1 on who the memory's cluster is scores high; one that sees no difference, 0.5
        Consistency   1 − variance of the engine's recent per-operation coherence
Then Johari per space (utl.johari, threshold from the constitution) and a confidence: how far the nearer of
ΔS and ΔC is from the threshold, scaled to [0, 1]. Read-only; runs in a worker thread.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np

from contextgraph.errors import NodeNotFound
from contextgraph.fingerprint import SPACES
from contextgraph.services.memory import space_similarities
from contextgraph.utl import delta_c as dc
from contextgraph.utl.johari import classify

# What each space knows about a memory, for the cross-space insights ("knows what, not why").
ASPECT = {
    1: "what it means", 2: "when (recently)", 3: "when (in the day/week cycle)", 4: "where in the sequence",
    5: "why (cause and effect)", 6: "the exact wording", 7: "how in code", 8: "its graph neighbourhood",
    9: "its surface form", 10: "other modalities", 11: "which entities", 12: "the token-level detail",
    13: "the key terms",
}
KNOWN = {"Open", "Hidden"}  # low novelty: the space has seen this


def _confidence(delta_s: float, delta_c: float, threshold: float) -> float:
    span = max(threshold, 1.0 - threshold) or 1.0
    return float(min(1.0, min(abs(delta_s - threshold), abs(delta_c - threshold)) / span))


def insights(quadrants: list[str]) -> list[str]:
    """E1 (semantic: what) against every space that disagrees with it about whether this is known."""
    e1 = quadrants[0]
    out = []
    for space, q in zip(SPACES[1:], quadrants[1:]):
        if q == e1:
            continue
        line = f"{e1} in E1 but {q} in E{space.id} ({space.name})"
        if e1 in KNOWN and q not in KNOWN:
            line += f": knows {ASPECT[1]}, not {ASPECT[space.id]}"
        elif e1 not in KNOWN and q in KNOWN:
            line += f": knows {ASPECT[space.id]}, not {ASPECT[1]}"
        out.append(line)
    return out


async def classify_memory(memory: Any, cognition: Any, constitution: Any, memory_id: str) -> dict[str, Any]:
    memory.open()
    store = memory.record_store
    record = store.get(memory_id)
    if record is None:
        raise NodeNotFound(f"No live memory has id {memory_id}. search_graph finds memories by content.",
                           node_id=memory_id)
    pipeline = await memory.pipeline()
    utl = constitution["utl"]
    k = int(utl["knn_k"])
    threshold = float(utl["johari_threshold"])
    connect = float(constitution["memory"]["connectivity_threshold"])
    weights = utl["delta_c_weights"]
    history = cognition.snapshot()["coherence_history"]

    def run() -> dict[str, Any]:
        indexes = memory.indexes
        indexes.catch_up(store)
        (fp,) = store.fingerprints([record.seq])
        ranked = [seq for seq, _ in indexes.search(1, fp[1], 2 * k + 1) if seq != record.seq][: 2 * k]
        fps = [f for f in store.fingerprints(ranked) if f is not None] if ranked else []
        near, ring = fps[:k], fps[k:]
        by_space = {e.space: e for e in pipeline.embedders}
        consistency = dc.consistency(history)
        rows = []
        for space in SPACES:
            sims = space_similarities(by_space, space, fp, near)
            ring_sims = space_similarities(by_space, space, fp, ring)
            ds = float(np.clip(1.0 - sims.mean(), 0.0, 1.0)) if sims.size else float(utl["empty_store_delta_s"])
            conn = dc.connectivity(sims, connect)
            fit = dc.cluster_fit_from_distances(1.0 - sims, 1.0 - ring_sims)
            dcv = dc.delta_c(conn, fit, consistency, weights) if sims.size else float(utl["empty_store_delta_c"])
            q = classify(ds, dcv, threshold)
            rows.append({"space": f"E{space.id}", "name": space.name, "delta_s": round(ds, 4),
                         "delta_c": round(dcv, 4), "connectivity": round(conn, 4), "cluster_fit": round(fit, 4),
                         "quadrant": q, "confidence": round(_confidence(ds, dcv, threshold), 4)})
        quadrants = [r["quadrant"] for r in rows]
        counts = {q: quadrants.count(q) for q in ("Open", "Blind", "Hidden", "Unknown")}
        dominant = max(counts, key=lambda q: (counts[q], -("Open", "Hidden", "Unknown", "Blind").index(q)))
        return {
            "memory_id": memory_id,
            "quadrants": quadrants,
            "confidences": [r["confidence"] for r in rows],
            "per_space": rows,
            "dominant_quadrant": dominant,
            "suggested_action": utl["johari_actions"][dominant],
            "counts": counts,
            "insights": insights(quadrants),
            "neighbours": len(near),
            "consistency": round(consistency, 4),
            "threshold": threshold,
            "method": (f"ΔS = 1 − mean similarity to the {k} nearest (by E1, itself excluded) in each space's own "
                       "measure; ΔC = 0.4·Connectivity + 0.4·ClusterFit (local silhouette: those k vs the next "
                       f"{k}) + 0.2·Consistency (1 − variance of recent coherence); confidence = distance of the "
                       "nearer of ΔS, ΔC from the threshold, scaled to [0, 1]"),
        }

    return await anyio.to_thread.run_sync(run)
