"""Amortized shortcuts (SPEC §10): how often each multi-hop graph path was traversed, and which became edges.

find_causal_path, get_neighborhood and the dream's walks report the paths they traverse; each traversal counts
once for every sub-path of at least `min_hops` hops (graph.dream.sub_paths). A path traversed `min_traversals`
times qualifies: the dream adds a direct edge from its first to its last memory with the product of its edges'
weights (services.dream_phases). Bounded: at most `max_tracked_paths` paths are counted; when full, the least
traversed half is forgotten. Persisted with the dream's state.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from contextgraph.constitution import Constitution
from contextgraph.graph.dream import sub_paths


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
