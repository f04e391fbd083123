"""Memories retrieved together (docs/engine.md#nrem): each search's first `top` results count as one
co-retrieval of every pair among them; NREM strengthens the edges of the pairs retrieved together at least
`min_count` times since the last dream, as a replay that activates both ends fully (φᵢ = φⱼ = 1).

Cheap: a search adds at most top·(top − 1)/2 counts to a dict, on the worker that follows the answers
(docs/engine.md#after-the-answer), while a dream drains it on the event loop and a save reads it on the writer:
one lock keeps the dict whole between them. Bounded: at most `max_tracked_pairs` pairs are counted; when full,
the least retrieved half is forgotten. Persisted with the dream's state, so that a restart between searches and
a dream loses nothing."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.graph import dream as kernels
from contextgraph.services.dreams.dream_phases import Hebbian
from contextgraph.storage.base import GraphTxn, MemoryStore


class CoRetrieval:
    def __init__(self, constitution: Constitution) -> None:
        s = constitution["dream"]["nrem"]["co_retrieval"]
        self.top = int(s["top"])
        self.min_count = int(s["min_count"])
        self.max_pairs = int(s["max_tracked_pairs"])
        self.counts: dict[tuple[str, str], int] = {}
        self.dirty = False
        self._lock = threading.Lock()

    def record(self, ids: Sequence[str]) -> None:
        """One search's results, best first."""
        first = list(dict.fromkeys(ids[: self.top]))
        with self._lock:
            for a, b in itertools.combinations(sorted(first), 2):
                self.counts[(a, b)] = self.counts.get((a, b), 0) + 1
                self.dirty = True
            if len(self.counts) > self.max_pairs:
                keep = sorted(self.counts, key=lambda p: -self.counts[p])[: self.max_pairs // 2]
                self.counts = {p: self.counts[p] for p in keep}

    def drain(self) -> list[tuple[str, str]]:
        """The pairs retrieved together often enough, forgotten once handed over (a dream strengthens each once)."""
        with self._lock:
            ready = [p for p, c in self.counts.items() if c >= self.min_count]
            for p in ready:
                del self.counts[p]
            if ready:
                self.dirty = True
            return ready

    def to_doc(self) -> list[list[Any]]:
        with self._lock:
            self.dirty = False
            return [[a, b, c] for (a, b), c in self.counts.items()]

    def load_doc(self, doc: list[list[Any]]) -> None:
        with self._lock:
            self.counts = {(str(a), str(b)): int(c) for a, b, c in doc}
            self.dirty = False


def commit(store: MemoryStore, pairs: list[tuple[str, str]], rule: Hebbian) -> tuple[int, set[str]]:
    """Every edge between each pair, as it is now, gets the Hebbian update of a full co-activation, in one
    transaction; (edges strengthened, the memories whose edges changed). A pair with no edge gets none: NREM
    strengthens what the store and the REM phase linked, it does not link."""

    def write(g: GraphTxn) -> tuple[int, set[str]]:
        up = 0
        touched: set[str] = set()
        for a, b in pairs:
            for edge in [e for e in g.edges(a) if e.other(a) == b]:
                new = float(kernels.hebbian(np.array([edge.weight]), np.ones(1), np.ones(1), rule.eta, rule.decay,
                                            rule.floor, rule.cap)[0])
                if new > edge.weight:
                    g.put_edge(dataclasses.replace(edge, weight=new))
                    up += 1
                    touched.update((a, b))
        return up, touched

    return store.graph_write(write)
