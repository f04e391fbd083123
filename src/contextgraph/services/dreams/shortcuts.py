"""Amortized shortcuts (docs/engine.md): how often each multi-hop graph path was traversed, and which became edges.

find_causal_path, get_neighborhood and the dream's walks report the paths they traverse; each traversal counts
once for every sub-path of at least `min_hops` hops (graph.dream.sub_paths). A path traversed `min_traversals`
times qualifies: the dream adds a direct edge from its first to its last memory with the product of its edges'
weights (services.dream_phases). Bounded: at most `max_tracked_paths` paths are counted; when full, the least
traversed half is forgotten. Persisted with the dream's state.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any

from contextgraph.constitution import Constitution
from contextgraph.graph.dream import path_weight, shortcut_confidence, sub_paths
from contextgraph.storage.base import GraphTxn


class ShortcutTracker:
    def __init__(self, constitution: Constitution) -> None:
        s = constitution["dream"]["shortcuts"]
        self.min_hops = int(s["min_hops"])
        self.min_traversals = int(s["min_traversals"])
        self.min_confidence = float(s["min_confidence"])
        self.max_paths = int(s["max_tracked_paths"])
        self._lock = threading.Lock()
        self.counts: dict[tuple[str, ...], int] = {}
        self.sources: dict[tuple[str, ...], set[str]] = {}
        self.applied: dict[tuple[str, ...], dict[str, Any]] = {}  # path → the edge made of it
        self.dirty = False

    def record(self, path: Sequence[str], source: str) -> int:
        """Count one traversal of `path` (and of its long-enough sub-paths); returns how many were counted."""
        pieces = list(sub_paths(path, self.min_hops))
        if not pieces:
            return 0
        with self._lock:
            for piece in pieces:
                self.counts[piece] = self.counts.get(piece, 0) + 1
                self.sources.setdefault(piece, set()).add(source)
            if len(self.counts) > self.max_paths:
                keep = sorted(self.counts, key=lambda p: -self.counts[p])[: self.max_paths // 2]
                self.counts = {p: self.counts[p] for p in keep}
                self.sources = {p: self.sources.get(p, set()) for p in keep}
            self.dirty = True
        return len(pieces)

    def qualifying(self) -> list[tuple[tuple[str, ...], int]]:
        """Paths traversed at least min_traversals times, most traversed first (longest first on ties)."""
        with self._lock:
            found = [(p, c) for p, c in self.counts.items() if c >= self.min_traversals]
        return sorted(found, key=lambda pc: (-pc[1], -len(pc[0]), pc[0]))

    def mark_applied(self, path: tuple[str, ...], edge: dict[str, Any]) -> None:
        with self._lock:
            self.applied[path] = edge
            self.dirty = True

    def to_doc(self) -> dict[str, Any]:
        with self._lock:
            self.dirty = False
            return {"counts": [[list(p), c, sorted(self.sources.get(p, ()))] for p, c in self.counts.items()],
                    "applied": [[list(p), e] for p, e in self.applied.items()]}

    def load_doc(self, doc: dict[str, Any]) -> None:
        with self._lock:
            self.counts = {tuple(p): int(c) for p, c, _ in doc.get("counts", [])}
            self.sources = {tuple(p): set(s) for p, _, s in doc.get("counts", [])}
            self.applied = {tuple(p): e for p, e in doc.get("applied", [])}
            self.dirty = False


def neighbourhood_paths(payload: dict[str, Any]) -> list[list[str]]:
    """The root-to-node paths a get_neighborhood answer traversed (each neighbour's `via` chain), deepest
    first; only those of ≥ 2 hops (shorter ones have no sub-path worth a shortcut)."""
    root = payload.get("node_id")
    parent = {n["id"]: n["via"] for n in payload.get("neighbors", []) if "id" in n and "via" in n}
    paths = []
    for node in parent:
        path = [node]
        while path[-1] != root and path[-1] in parent and len(path) <= len(parent) + 1:
            path.append(parent[path[-1]])
        if path[-1] == root and len(path) >= 3:
            paths.append(path[::-1])
    return sorted(paths, key=len, reverse=True)


def describe(g: GraphTxn, tracker: ShortcutTracker, min_confidence: float, limit: int) -> dict[str, Any]:
    """get_amortized_shortcuts: the qualifying paths as the graph has them now (weights and confidences read
    from the current edges; a path whose hop was removed is reported broken), best first."""
    items = []
    broken = 0
    for path, count in tracker.qualifying():
        hops = []
        for a, b in itertools.pairwise(path):
            found = [e for e in g.edges(a) if e.other(a) == b]
            hops.append(max(found, key=lambda e: e.weight) if found else None)
        if any(h is None for h in hops):
            broken += 1
            continue
        edges = [h for h in hops if h is not None]
        confidence = shortcut_confidence(count, tracker.min_traversals, tracker.min_confidence)
        if confidence < min_confidence:
            continue
        applied = tracker.applied.get(path)
        items.append({"path": list(path), "hops": len(path) - 1, "traversals": count,
                      "traversed_by": sorted(tracker.sources.get(path, ())),
                      "weight": round(path_weight([e.weight for e in edges]), 6),
                      "confidence": round(confidence, 6), "edge_types": [e.type for e in edges],
                      "applied": bool(applied and applied.get("created")), "edge": applied})
    items.sort(key=lambda i: (-i["confidence"], -i["traversals"]))
    return {"shortcuts": items[:limit], "count": min(limit, len(items)), "qualifying": len(items),
            "tracked_paths": len(tracker.counts), "broken_paths": broken,
            "criteria": {"min_hops": tracker.min_hops, "min_traversals": tracker.min_traversals,
                         "min_confidence": min_confidence},
            "method": "each traversal by find_causal_path, get_neighborhood or a dream walk counts for every "
                      f"sub-path of ≥ {tracker.min_hops} hops; a path traversed ≥ {tracker.min_traversals} times "
                      "becomes a direct edge (weight = product of its edges' weights) at the next REM phase; "
                      "confidence = (1 − 0.3·min_traversals/traversals)·weakest edge confidence"}
