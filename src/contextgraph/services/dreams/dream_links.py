"""REM's shared-name links (docs/engine.md#rem) against the store: read the walk's sample (its texts, its causal
neighbours, what is linked already), propose the pairs that share names (services.dreams.shared_names), keep
those the walk supports (graph.dream.walk_rank), and commit them in one transaction marked `dream`, undoable
as one operation by restore_from_hash. Plain functions: the read in a worker thread, the commit on the writer."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contextgraph.graph import dream as kernels
from contextgraph.graph.kernels import reversal_hash
from contextgraph.services.dreams.dream_phases import Ball
from contextgraph.services.dreams.shared_names import names_by_memory, propose, with_causal_neighbours
from contextgraph.storage.base import Edge, GraphTxn, MemoryStore

PROVENANCE = "dream"
_RANK_BATCH = 32  # pairs ranked between two looks at the wake request (each end: one row of ball distances)


@dataclass(frozen=True, slots=True)
class Settings:
    max_share: float  # a name held by more of the sample than this is common
    min_common: int  # … but never counted common below this many memories
    min_evidence: float  # Σ log(n / df) of the shared names
    max_walk_rank: float  # the share of the sample the walk is likelier to head for
    max_links: int  # per dream
    weight: float
    confidence: float

    @classmethod
    def of(cls, rem: Mapping[str, Any]) -> Settings:
        s = rem["shared_names"]
        return cls(float(s["max_share"]), int(s["min_common"]), float(s["min_evidence"]), float(s["max_walk_rank"]),
                   int(s["max_links"]), float(rem["new_edge_weight"]), float(rem["new_edge_confidence"]))


@dataclass(frozen=True, slots=True)
class Link:
    source: str
    target: str
    shared: tuple[str, ...]
    evidence: float
    walk_rank: float

    def view(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "shared": list(self.shared),
                "evidence": self.evidence, "walk_rank": round(self.walk_rank, 4)}


def plan(store: MemoryStore, ball: Ball, settings: Settings, curvature: float,
         stop: Callable[[], bool] = lambda: False) -> list[Link]:
    """The links this dream would make among the ball's memories, those the walk supports most first, at most
    max_links; [] once `stop` says so (checked between memories and between batches of pairs, so that a wake
    request ends the step within milliseconds: docs/engine.md#dreams)."""

    def read(g: GraphTxn) -> tuple[dict[str, str], dict[str, set[str]], dict[str, set[str]]]:
        texts: dict[str, str] = {}
        causal: dict[str, set[str]] = {}
        linked: dict[str, set[str]] = {}
        for memory_id in ball.ids:
            record = g.get(memory_id)
            if record is None:
                continue
            texts[memory_id] = record.content
            edges = g.edges(memory_id)
            # a Temporal edge says only that two were stored one after the other: not an association
            linked[memory_id] = {e.other(memory_id) for e in edges if e.type != "Temporal"}
            causal[memory_id] = {e.other(memory_id) for e in edges if e.type == "Causal"}
        return texts, causal, linked

    texts, causal, linked = store.graph_read(read)
    names = with_causal_neighbours(names_by_memory(texts, stop), causal)
    proposals = propose(names, lambda a, b: b in linked.get(a, set()), settings.max_share, settings.min_common,
                        settings.min_evidence)
    kept: list[Link] = []
    for start in range(0, len(proposals), _RANK_BATCH):
        if stop():
            return []
        batch = proposals[start : start + _RANK_BATCH]
        ranks = kernels.walk_rank(ball.points, [(ball.index[p.a], ball.index[p.b]) for p in batch], curvature)
        kept += [Link(p.a, p.b, p.shared, p.evidence, float(r))
                 for p, r in zip(batch, ranks) if r <= settings.max_walk_rank]
    return sorted(kept, key=lambda k: (k.walk_rank, -k.evidence))[: settings.max_links]


def commit(store: MemoryStore, links: list[Link], settings: Settings) -> list[dict[str, Any]]:
    """Link each planned pair still unlinked (both ends live) with a Relational edge whose provenance names
    what they share ("dream: shares billing-api"), in one transaction; each link made carries the operation's
    reversal hash (restore_from_hash removes exactly these edges)."""
    now = time.time()

    def write(g: GraphTxn) -> list[dict[str, Any]]:
        made = []
        for link in links:
            a, b = link.source, link.target
            if g.get(a) is None or g.get(b) is None or any(e.other(a) == b and e.type != "Temporal"
                                                            for e in g.edges(a)):
                continue
            names = ", ".join(n for n in link.shared if not n.startswith("causal:")) or "a causal neighbour"
            g.put_edge(Edge(a, b, "Relational", weight=settings.weight, confidence=settings.confidence,
                            direction="undirected", provenance=f"{PROVENANCE}: shares {names}", created_at=now))
            made.append(link)
        if not made:
            return []
        ids = list(dict.fromkeys(x for link in made for x in (link.source, link.target)))
        op = {"op": "link", "ids": ids, "edges": [[k.source, k.target, "Relational"] for k in made], "at": now,
              "by": "dream"}
        h = reversal_hash(op)
        g.put_reversal(h, op)
        return [{**k.view(), "reversal_hash": h} for k in made]

    return store.graph_write(write)
