"""get_memetic_status: the whole system at a glance, every number read from the store and the engine.

Curation tasks are looked for among the `curation_window` most recent memories, so the call stays cheap at any
store size (a full scan would grow with the store): duplicates are Semantic edges whose weight (E1 cosine at
store time) reaches θ_dup (ATC's, in the memory's domain), orphans are memories with no edge at all, conflicts
are the workspace's latest competition if more than one memory passed its threshold there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from contextgraph.constitution import Constitution
from contextgraph.services.engine.atc import GENERAL, domain_of
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.purpose.teleology import DOCUMENT as TELEOLOGY_DOCUMENT
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import GraphTxn
from contextgraph.utl.johari import classify


async def memetic_status(storage: StoreHandle, perception: Perception, cognition: CognitiveState,
                         workspace: WorkspaceService, constitution: Constitution,
                         duplicate_threshold: Callable[[str], float] | None = None) -> dict[str, Any]:
    """`duplicate_threshold`: θ_dup per domain (ATC, services.atc); the constitution's prior without it."""
    store = (await storage.ready()).store
    window = int(constitution["memetic"]["curation_window"])
    prior = float(constitution["atc"]["priors"]["theta_dup"])
    theta_dup_of = duplicate_threshold or (lambda _domain: prior)
    theta_dup = theta_dup_of(GENERAL)

    def scan() -> tuple[int, dict[str, Any] | None, int, list[dict], list[str], int]:
        def read(g: GraphTxn) -> tuple[int, list[dict], list[str], int]:
            recent = g.recent(window, None, None)
            duplicates, orphans, seen = [], [], set()
            for record in recent:
                edges = g.edges(record.id)
                record_theta = theta_dup_of(domain_of(record))
                if not edges:
                    orphans.append(record.id)
                for edge in edges:
                    pair = tuple(sorted((edge.source, edge.target)))
                    if edge.type == "Semantic" and edge.weight >= record_theta and pair not in seen:
                        seen.add(pair)
                        duplicates.append({"memories": list(pair), "similarity": edge.weight})
            return g.edge_count(), duplicates, orphans, len(recent)

        star = (store.get_document(TELEOLOGY_DOCUMENT) or {}).get("star")
        return store.count(), star, *store.graph_read(read)  # one snapshot for the edges and the window

    count, star, edges, duplicates, orphans, examined = await anyio.to_thread.run_sync(scan)
    cognition.observe_memory_count(count)
    pulse = cognition.pulse()
    s = cognition.snapshot()
    p = int(constitution.get("pulse.precision"))
    stage = s["lifecycle"]
    status = workspace.status()
    conflicts = status["conflict_memories"]
    return {
        "phase": stage.stage,
        "fingerprintCount": count,
        "utl": {
            "entropy": round(s["entropy"], p),
            "coherence": round(s["coherence"], p),
            "learningScore": round(s["learning_score"], p),
            "johariQuadrant": classify(s["entropy"], s["coherence"], s["rules"].johari_threshold),
            "consolidationPhase": cognition.consolidation_phase(),
            "suggestedAction": pulse["suggested_action"],
        },
        "layers": {
            "perception": {"status": perception.model_status(), "spaces": 13},
            "memory": {"status": "active" if count else "empty", "memories": count, "edges": edges},
            "reasoning": {"status": "active" if count else "empty",
                          "retrieval_stages": _stages(star),
                          "competitions": status["counts"]["competitions"],
                          "kuramoto_r": round(cognition.network.read().r, p)},
            "meta": {"status": "active" if s["operations"] else "idle", "meta_accuracy": round(s["meta_accuracy"], p),
                     "operations": s["operations"], "identity_continuity": round(s["identity_continuity"], p)},
            "action": {"status": "active" if status["active_memory"] else "idle",
                       "workspace_active": (status["active_memory"] or {}).get("memory_id")},
        },
        "curation_tasks": {
            "window": examined,
            "duplicates": duplicates[:20],
            "duplicate_threshold": theta_dup,
            "orphans": orphans[:20],
            "orphan_count": len(orphans),
            "conflicts": [conflicts] if conflicts else [],
            "suggested": _suggest(duplicates, orphans, conflicts),
        },
    }


def _suggest(duplicates: list, orphans: list, conflicts: list) -> list[str]:
    out = []
    if duplicates:
        out.append(f"merge_concepts: {len(duplicates)} near-duplicate pair(s)")
    if orphans:
        out.append(f"annotate_node or link: {len(orphans)} memory(ies) with no edge")
    if conflicts:
        out.append("critique_context: memories competing for the workspace")
    return out


def _stages(star: dict[str, Any] | None) -> str:
    """Which retrieval stages run: stage 4 once a north star exists (services.teleology's document)."""
    if star:
        return f"S1, S2, S3, S4 (alignment to north star {star['id']}), S5"
    return "S1, S2, S3, S5 (S4 waits for a north star: auto_bootstrap_north_star)"
