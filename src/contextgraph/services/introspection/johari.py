"""Per-memory Johari classification (docs/utl.md#johari-quadrants): where one stored memory sits, space by space.

The memory's fingerprint is scored against the store with itself excluded by the same computation as
inject_context and compute_delta_sc (services.delta_sc): per space, ΔSᵢ by the space's method and
ΔCᵢ = 0.4·Connectivity + 0.4·ClusterFit + 0.2·Consistency. Then Johari per space (utl.johari, threshold from
ATC: services.atc) and a confidence: how far the nearer of ΔS and ΔC is from the threshold, scaled to [0, 1].
Read-only; runs in a worker thread.
"""

from __future__ import annotations

from typing import Any

import anyio

from contextgraph.constitution import Constitution
from contextgraph.errors import NodeNotFound
from contextgraph.fingerprint import SPACES
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.delta_sc_result import DeltaSc
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle

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


async def classify_memory(storage: StoreHandle, perception: Perception, cognition: CognitiveState,
                          constitution: Constitution, memory_id: str) -> dict[str, Any]:
    store = (await storage.ready()).store
    record = await storage.live_record(memory_id)
    pipeline = await perception.pipeline()
    threshold = float(storage.delta_sc.threshold)  # ATC's `johari` (services.atc sets it on the computer)
    state = cognition.snapshot()

    def run() -> DeltaSc:
        edge_weights = [e.weight for e in store.graph_read(lambda g: g.edges(memory_id))]
        own = store.triples_of(memory_id)
        (fp,) = store.fingerprints([record.seq])
        if fp is None:
            raise NodeNotFound(f"Memory {memory_id} was deleted while it was being classified.", node_id=memory_id)
        return storage.delta_sc.compute(store, storage.indexes, pipeline.embedders, fp,
                                        coherence_history=state["coherence_history"],
                                        emotional_weight=state["emotional_weight"],
                                        exclude=frozenset({record.seq}), edge_weights=edge_weights,
                                        triples=own, own_triples=own)

    result = await anyio.to_thread.run_sync(run)
    rows = []
    for space, diag in zip(result.per_space(), result.diagnostics()):
        rows.append({**space, "connectivity": diag["connectivity"], "cluster_fit": diag["cluster_fit"],
                     "confidence": round(_confidence(space["delta_s"], space["delta_c"], threshold), 4)})
    quadrants = [r["quadrant"] for r in rows]
    counts = {q: quadrants.count(q) for q in ("Open", "Blind", "Hidden", "Unknown")}
    dominant = max(counts, key=lambda q: (counts[q], -("Open", "Hidden", "Unknown", "Blind").index(q)))
    return {
        "memory_id": memory_id,
        "quadrants": quadrants,
        "confidences": [r["confidence"] for r in rows],
        "per_space": rows,
        "dominant_quadrant": dominant,
        "suggested_action": cognition.action_for(dominant),
        "counts": counts,
        "insights": insights(quadrants),
        "neighbours": max((s.neighbours for s in result.spaces), default=0),
        "consistency": round(result.consistency, 4),
        "threshold": threshold,
        "method": ("ΔS per space by its method (see per_space[].method) against the store, the memory excluded; "
                   "ΔC = 0.4·Connectivity + 0.4·ClusterFit (the clustering coefficient with the nearest) + "
                   "0.2·Consistency (1 − variance of recent coherence); confidence = distance of the nearer of "
                   "ΔS, ΔC from the threshold, scaled to [0, 1]"),
    }
