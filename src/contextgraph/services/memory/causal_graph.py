"""The causal neighbourhood of a memory, read from the store for omni_infer and query_causal: every cause → effect
link within `max_hops` of it, from stored Causal edges and, where none is stored, from the E5 halves of nearby
memories (graph.causal.e5_link_strength). Runs in a worker thread over one store; writes nothing.

A memory whose every causal cue is negated or hedged ("flooded streets do not cause power outages") states no
cause, so it takes part in no link, stored or inferred: negated statements are never causal evidence.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextgraph.embedders.e05_causal import CausalEmbedder, causal_spans
from contextgraph.graph.causal import CausalLink, e5_link_strength
from contextgraph.graph.kernels import effective_weight
from contextgraph.storage.base import MemoryRecord, MemoryStore, SearchIndexes


@dataclass(frozen=True, slots=True)
class CausalSettings:
    max_hops: int
    candidates_k: int
    min_cosine: float
    min_margin: float
    discount: float
    max_explored: int

    @classmethod
    def from_constitution(cls, c: Mapping[str, Any]) -> CausalSettings:
        s = c["causal_inference"]
        return cls(int(s["max_hops"]), int(s["candidates_k"]), float(s["e5_link_min_cosine"]),
                   float(s["e5_link_min_margin"]), float(s["e5_discount"]), int(s["max_explored"]))


@dataclass
class Neighbourhood:
    links: dict[tuple[str, str], CausalLink] = field(default_factory=dict)  # (cause, effect) → link
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    denials: set[str] = field(default_factory=set)  # examined memories whose every cue is negated
    truncated: bool = False

    def adjacency(self, backward: bool = False) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for cause, effect in self.links:
            a, b = (effect, cause) if backward else (cause, effect)
            out.setdefault(a, []).append(b)
        return out


@functools.lru_cache(maxsize=50_000)
def stance(content: str) -> str:
    """"causal" (names a cause and an effect), "denial" (its only cues are negated or hedged) or "none".
    Cached by content (a memory's content never changes under its id): the cue scan of a long memory is most of
    what a causal walk costs, and the same neighbours come up call after call."""
    spans = causal_spans(content)
    if spans.cues:
        return "causal"
    return "denial" if spans.negated else "none"


class CausalExplorer:
    def __init__(self, store: MemoryStore, indexes: SearchIndexes, e5: CausalEmbedder, s: CausalSettings) -> None:
        self.store, self.indexes, self.e5, self.s = store, indexes, e5, s
        self._halves: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}  # None: no cue, no halves to match
        self._stance: dict[str, str] = {}

    def explore(self, start: MemoryRecord, forward: bool, backward: bool) -> Neighbourhood:
        """Breadth first from `start`, following effects (forward) and/or causes (backward) up to max_hops."""
        hood = Neighbourhood(records={start.id: start})
        self._note(start, hood)
        depth = {start.id: 0}
        frontier = deque([start])
        while frontier:
            record = frontier.popleft()
            if depth[record.id] >= self.s.max_hops or record.id in hood.denials:
                continue
            for link in self._links_of(record, forward, backward, hood):
                hood.links.setdefault((link.cause, link.effect), link)
                other = link.effect if link.cause == record.id else link.cause
                if other in depth:
                    continue
                if len(depth) >= self.s.max_explored:
                    hood.truncated = True
                    continue
                depth[other] = depth[record.id] + 1
                frontier.append(hood.records[other])
        return hood

    def _note(self, record: MemoryRecord, hood: Neighbourhood) -> str:
        kind = self._stance.get(record.id)
        if kind is None:
            kind = self._stance[record.id] = stance(record.content)
        if kind == "denial":
            hood.denials.add(record.id)
        return kind

    def _links_of(self, record: MemoryRecord, forward: bool, backward: bool, hood: Neighbourhood) -> list[CausalLink]:
        found: list[CausalLink] = []
        stored = self.store.graph_read(lambda g: ((g.edges_out(record.id) if forward else [])
                                                  + (g.edges_in(record.id) if backward else [])))
        others = {e.target if e.source == record.id else e.source for e in stored if e.type == "Causal"}
        records = dict(zip(others, [self.store.get(i) for i in others]))
        for edge in stored:
            other = records.get(edge.target if edge.source == record.id else edge.source)
            if edge.type != "Causal" or other is None:
                continue
            hood.records.setdefault(other.id, other)
            if self._note(other, hood) == "denial":
                continue
            strength = max(1e-6, effective_weight(edge.weight, edge.excitatory, edge.inhibitory, edge.modulatory))
            found.append(CausalLink(edge.source, edge.target, strength, "edge"))
        found += self._inferred(record, forward, backward, hood)
        return found

    def _inferred(self, record: MemoryRecord, forward: bool, backward: bool,
                  hood: Neighbourhood) -> list[CausalLink]:
        """Links to nearby memories with no stored edge, from the E5 halves (both memories must name a cause and
        an effect: a memory without a cue has equal halves, which would match anything on its topic)."""
        mine = self._halves_of(record)
        if mine is None:
            return []
        cause, effect = mine
        (fp,) = self.store.fingerprints([record.seq], spaces=[1])
        queries = [(5, np.concatenate([effect, effect]) / np.sqrt(2.0)),
                   (5, np.concatenate([cause, cause]) / np.sqrt(2.0))]
        if fp is not None:
            queries.append((1, np.asarray(fp[1])))
        seqs: dict[int, None] = {}
        for space, query in queries:
            seqs.update((seq, None) for seq, _ in self.indexes.search(space, query.astype(np.float32),
                                                                     self.s.candidates_k + 1))
        seqs.pop(record.seq, None)
        order = list(seqs)
        links: list[CausalLink] = []
        for other, fp5 in zip(self.store.get_by_seq(order), self.store.fingerprints(order, spaces=[5])):
            if other is None or fp5 is None:
                continue
            hood.records.setdefault(other.id, other)
            if self._note(other, hood) != "causal":
                continue
            o_cause, o_effect = self._cache_halves(other.id, np.asarray(fp5[5]))
            out, into = float(effect @ o_cause), float(o_effect @ cause)  # record → other, other → record
            if forward:
                s = e5_link_strength(out, into, min_cosine=self.s.min_cosine, min_margin=self.s.min_margin,
                                     discount=self.s.discount)
                if s is not None:
                    links.append(CausalLink(record.id, other.id, s, "e5", round(out, 6), round(out - into, 6)))
            if backward:
                s = e5_link_strength(into, out, min_cosine=self.s.min_cosine, min_margin=self.s.min_margin,
                                     discount=self.s.discount)
                if s is not None:
                    links.append(CausalLink(other.id, record.id, s, "e5", round(into, 6), round(into - out, 6)))
        return links

    def _cache_halves(self, memory_id: str, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        halves = self.e5.halves(vector)
        self._halves[memory_id] = halves
        return halves

    def _halves_of(self, record: MemoryRecord) -> tuple[np.ndarray, np.ndarray] | None:
        if record.id in self._halves:
            return self._halves[record.id]
        if stance(record.content) != "causal":
            self._halves[record.id] = None
            return None
        (fp,) = self.store.fingerprints([record.seq], spaces=[5])
        return None if fp is None else self._cache_halves(record.id, np.asarray(fp[5]))
