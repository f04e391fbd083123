"""The edges a new memory gets on store, by rule: Relational to what it names in link_to, Semantic to its nearest
neighbours in E1, Causal cause → effect for its E5 matches and for the stored memories its cue clauses name
(causal_links), and Temporal from its session's previous memory.
Reads the store and the indexes (in the caller's worker thread); writes nothing: the put commits the edges."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from contextgraph.embedders.e05_causal import CausalEmbedder, causal_spans
from contextgraph.errors import NodeNotFound
from contextgraph.fingerprint import Fingerprint
from contextgraph.services.memory.causal_links import CausalMatch, LinkRule
from contextgraph.storage.base import Edge, MemoryStore, SearchIndexes


class AutoEdgeRules:
    def __init__(self, graph: Mapping[str, Any]) -> None:
        self.semantic_min = float(graph["semantic_edge_min_cosine"])
        self.semantic_k = int(graph["semantic_edge_k"])
        self.causal_min = float(graph["causal_edge_min_cosine"])
        self.causal_min_margin = float(graph["causal_edge_min_margin"])
        self.causal_k = int(graph["causal_edge_k"])
        self.links = LinkRule.of(graph)
        self.link_weight = float(graph["link_edge_weight"])
        self.temporal_weight = float(graph["temporal_edge_weight"])

    @staticmethod
    def resolve_links(store: MemoryStore, link_to: Sequence[str]) -> list[str]:
        missing = [memory_id for memory_id in link_to if store.get(memory_id) is None]
        if missing:
            raise NodeNotFound(f"link_to names memories that do not exist: {', '.join(missing)}. search_graph finds "
                               "memories by content.", field="link_to", missing=missing)
        return list(link_to)

    @staticmethod
    def neighbour_vectors(store: MemoryStore, links: Sequence[str]) -> tuple[tuple[float, np.ndarray], ...]:
        """(edge weight, E1 vector) of the linked memories, for E8's graph embedding."""
        if not links:
            return ()
        seqs = [record.seq for record in (store.get(memory_id) for memory_id in links) if record is not None]
        # A link_to edge weighs 1.
        return tuple((1.0, np.asarray(fp[1])) for fp in store.fingerprints(seqs, spaces=[1]) if fp is not None)

    def graph_context(self, store: MemoryStore, links: Sequence[str], similar: Sequence[tuple[str, float]],
                      causal: Sequence[CausalMatch]) -> list[tuple[float, np.ndarray]]:
        """(edge weight, E1 vector) of every neighbour the new memory's edges will join it to (Temporal aside), one
        pair per edge as `edges` weighs it: E8 at store time is then what services.e8_refresh computes once the
        edges exist, and a new memory is compared in E8 with stored ones that already have their edges."""
        linked = set(links)
        weighted = ([(self.link_weight, m) for m in links]
                    + [(round(min(1.0, score), 6), m) for m, score in similar if m not in linked]
                    + [(round(min(1.0, c.similarity), 6), c.other) for c in causal])
        records = [store.get(m) for _, m in weighted]
        seqs = [r.seq for r in records if r is not None]
        e1 = {seq: np.asarray(fp[1]) for seq, fp in zip(seqs, store.fingerprints(seqs, spaces=[1])) if fp is not None}
        return [(w, e1[r.seq]) for (w, _), r in zip(weighted, records) if r is not None and r.seq in e1]

    def similar(self, store: MemoryStore, indexes: SearchIndexes, fingerprint: Fingerprint) -> list[tuple[str, float]]:
        """(id, E1 cosine) of the nearest existing memories above the Semantic-edge threshold."""
        nearest = indexes.search(1, fingerprint[1], self.semantic_k)
        hits = [(seq, score) for seq, score in nearest if score >= self.semantic_min]
        records = store.get_by_seq([seq for seq, _ in hits]) if hits else []
        return [(r.id, float(score)) for r, (_seq, score) in zip(records, hits) if r is not None]

    def causal(self, store: MemoryStore, indexes: SearchIndexes, content: str, fingerprint: Fingerprint,
               e5: CausalEmbedder) -> list[CausalMatch]:
        """Causal matches of a new memory against existing ones, from E5's [cause ; effect] halves. Only when both
        memories have causal cue spans (a memory without a cue has both halves equal to its whole text, which
        would make any memory on the same topic look like a cause or an effect). Candidates: the E1 nearest few,
        plus E5 nearest to [cause ; cause] and [effect ; effect] (which rank the others' effect resp. cause
        halves), never a full scan. A match needs similarity ≥ causal_edge_min_cosine and a margin over the
        reverse direction ≥ causal_edge_min_margin, which rules out restatements of the same cause and effect
        (both directions match). A candidate without a cue is matched by the explicit-link rule instead
        (causal_links.LinkRule.clause_matches): the same candidates, no further index query."""
        spans = causal_spans(content)
        if not spans.cues:
            return []
        cause, effect = e5.halves(np.asarray(fingerprint[5]))
        if np.allclose(cause, effect):
            return []
        seqs: dict[int, None] = {}
        for space, query in ((1, np.asarray(fingerprint[1])), (5, np.concatenate([cause, cause]) / np.sqrt(2.0)),
                             (5, np.concatenate([effect, effect]) / np.sqrt(2.0))):
            seqs.update((seq, None) for seq, _ in indexes.search(space, query.astype(np.float32), self.causal_k))
        order = list(seqs)
        found, uncued = [], []
        for record, fp in zip(store.get_by_seq(order), store.fingerprints(order, spaces=[5])):
            if record is None or fp is None:
                continue
            o_cause, o_effect = e5.halves(np.asarray(fp[5]))
            if np.allclose(o_cause, o_effect):
                uncued.append((record.id, o_cause))  # no cue: its halves are its whole text
                continue
            into, out = float(cause @ o_effect), float(effect @ o_cause)
            match = (CausalMatch("in", record.id, into, into - out) if into >= out
                     else CausalMatch("out", record.id, out, out - into))
            if match.similarity >= self.causal_min and match.margin >= self.causal_min_margin:
                found.append(match)
        return found + self.links.clause_matches(spans, cause, effect, uncued)

    def edges(self, memory_id: str, links: Sequence[str], similar: Sequence[tuple[str, float]],
              causal: Sequence[CausalMatch], now: float) -> tuple[list[Edge], Callable[[str, str], Edge]]:
        """The new memory's edges (weights: link_edge_weight, the E1 cosine, the cause/effect half similarity with
        the margin as confidence), and a factory for the Temporal edge from its session's previous memory, which
        the store resolves inside the put's transaction (so two concurrent stores cannot both claim it)."""
        edges = [Edge(memory_id, other, "Relational", weight=self.link_weight, created_at=now) for other in links]
        linked = set(links)
        edges += [Edge(memory_id, other, "Semantic", weight=round(min(1.0, score), 6),
                       confidence=round(min(1.0, score), 6), direction="undirected", created_at=now)
                  for other, score in similar if other not in linked]
        edges += [Edge(*((m.other, memory_id) if m.direction == "in" else (memory_id, m.other)), "Causal",
                       weight=round(min(1.0, m.similarity), 6), confidence=round(min(1.0, m.margin), 6),
                       created_at=now, provenance=f"cue: {m.cue}" if m.cue else "")
                  for m in causal]
        weight = self.temporal_weight

        def temporal(previous: str, new: str) -> Edge:
            return Edge(previous, new, "Temporal", weight=weight, created_at=now)

        return edges, temporal
