"""One step of each dream phase against the store: plain functions run in worker threads (reads) and on the
writer thread (each commit one small LMDB transaction). The math is graph.dream's.

A step first reads (one consistent snapshot), then commits what it computed in one write transaction that
re-reads every edge it changes: a curation between the read and the commit wins (a deleted memory's edge is
not recreated, a weight is updated from its current value), and an abort or a kill loses at most the step in
progress, never half of one (LMDB commits a transaction whole or not at all).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextgraph.graph import dream as kernels
from contextgraph.services.dreams.shortcuts import ShortcutTracker
from contextgraph.storage.base import Edge, GraphTxn, MemoryStore

SEMANTIC = 1
# projected E1 (norms ≤ 1) straight into exp₀: norms up to tanh(1) ≈ 0.76, so 100 steps of 0.1 cross a few memories
TANGENT_SCALE = 1.0


@dataclass(frozen=True, slots=True)
class Hebbian:
    eta: float
    decay: float
    floor: float
    cap: float


@dataclass
class EdgeUpdate:
    source: str
    target: str
    type: str
    coactivation: float  # φᵢ·φⱼ


# -- NREM ----------------------------------------------------------------------------------------------------
def replay_pool(store: MemoryStore, limit: int) -> list[str]:
    """Live memory ids, newest first (the pool the recency-biased sample draws from)."""
    return store.graph_read(lambda g: [r.id for r in g.recent(limit, None, None)])


def plan_replay(store: MemoryStore, cues: list[str], max_neighbours: int) -> list[EdgeUpdate]:
    """The Hebbian co-activations of replaying each cue: φ = 1 for the cue, max(0, cos E1) for its neighbours;
    every edge among the active memories gets φᵢ·φⱼ."""

    def read(g: GraphTxn) -> tuple[dict[str, list[Edge]], dict[str, int]]:
        edges: dict[str, list[Edge]] = {}
        seqs: dict[str, int] = {}
        for cue in cues:
            record = g.get(cue)
            if record is None:
                continue
            seqs[cue] = record.seq
            local = sorted(g.edges(cue), key=lambda e: -e.weight)[:max_neighbours]
            edges[cue] = local
            for e in local:
                other = e.other(cue)
                if other not in seqs and (r := g.get(other)) is not None:
                    seqs[other] = r.seq
                    edges[other] = sorted(g.edges(other), key=lambda e: -e.weight)[:max_neighbours]
        return edges, seqs

    edges, seqs = store.graph_read(read)
    ids = list(seqs)
    vectors = {i: np.asarray(fp[SEMANTIC], dtype=np.float64)
               for i, fp in zip(ids, store.fingerprints([seqs[i] for i in ids], spaces=[SEMANTIC])) if fp is not None}
    updates: dict[tuple[str, str, str], EdgeUpdate] = {}
    for cue in cues:
        if cue not in vectors:
            continue
        active = [cue] + [e.other(cue) for e in edges.get(cue, ()) if e.other(cue) in vectors]
        active = list(dict.fromkeys(active))
        phi = dict(zip(active[1:], kernels.activations(vectors[cue], np.stack([vectors[a] for a in active[1:]]))
                       if len(active) > 1 else []))
        phi[cue] = 1.0
        members = set(active)
        for node in active:
            for e in edges.get(node, ()):
                if e.source in members and e.target in members:
                    key = (e.source, e.target, e.type)
                    value = phi[e.source] * phi[e.target]
                    if key not in updates or updates[key].coactivation < value:
                        updates[key] = EdgeUpdate(e.source, e.target, e.type, value)
    return list(updates.values())


def commit_replay(store: MemoryStore, updates: list[EdgeUpdate], rule: Hebbian) -> tuple[int, int, set[str]]:
    """Apply the Hebbian rule to each edge as it is now, in one transaction; (strengthened, weakened, the
    memories whose edges changed)."""

    def write(g: GraphTxn) -> tuple[int, int, set[str]]:
        up = down = 0
        touched: set[str] = set()
        for u in updates:
            edge = g.get_edge(u.source, u.target, u.type)
            if edge is None:
                continue
            new = float(kernels.hebbian(np.array([edge.weight]), np.array([1.0]), np.array([u.coactivation]),
                                        rule.eta, rule.decay, rule.floor, rule.cap)[0])
            if new == edge.weight:
                continue
            up, down = (up + 1, down) if new > edge.weight else (up, down + 1)
            g.put_edge(dataclasses.replace(edge, weight=new))
            touched.update((edge.source, edge.target))
        return up, down, touched

    return store.graph_write(write)


# -- REM -----------------------------------------------------------------------------------------------------
@dataclass
class Ball:
    ids: list[str]
    points: np.ndarray  # n × dims, inside the unit ball
    unit: np.ndarray  # n × 384: unit E1 vectors (semantic distance = 1 − cosine)
    index: dict[str, int] = field(default_factory=dict)


def build_ball(store: MemoryStore, sample: int, dims: int, curvature: float) -> Ball | None:
    """The newest `sample` memories' E1 vectors projected (PCA) to `dims` and mapped into the Poincaré ball."""
    records = store.graph_read(lambda g: g.recent(sample, None, None))
    fps = store.fingerprints([r.seq for r in records], spaces=[SEMANTIC])
    kept = [(r.id, np.asarray(fp[SEMANTIC], dtype=np.float64)) for r, fp in zip(records, fps) if fp is not None]
    if len(kept) < 3:
        return None
    ids = [i for i, _ in kept]
    e1 = np.stack([v for _, v in kept])
    norms = np.linalg.norm(e1, axis=1, keepdims=True)
    unit = np.divide(e1, norms, out=np.zeros_like(e1), where=norms > 0)
    points = kernels.clip_to_ball(kernels.exp0(kernels.project(unit, dims) * TANGENT_SCALE, curvature), curvature)
    return Ball(ids, points, unit, {i: n for n, i in enumerate(ids)})


@dataclass
class WalkResult:
    visited: list[str]
    blind_spots: list[tuple[str, str, str]]
    graph_runs: list[list[str]]  # stretches of the walk along graph edges (traversals for shortcuts)


def rem_walk(store: MemoryStore, ball: Ball, rng: np.random.Generator, rem: dict[str, Any],
             stop: Callable[[], bool]) -> WalkResult:
    start = int(rng.integers(len(ball.ids)))
    visited_idx = kernels.walk(ball.points, start, rng, step=float(rem["step"]), max_steps=int(rem["max_steps"]),
                               temperature=float(rem["temperature"]), curvature=float(rem["curvature"]), stop=stop)
    visited = [ball.ids[i] for i in visited_idx]

    def read(g: GraphTxn) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        causal: dict[str, set[str]] = {}
        linked: dict[str, set[str]] = {}
        for node in dict.fromkeys(visited):
            edges = g.edges(node)
            # a Temporal edge only says the two were stored one after the other: not an association
            linked[node] = {e.other(node) for e in edges if e.type != "Temporal"}
            causal[node] = {e.other(node) for e in edges if e.type == "Causal"}
        return causal, linked

    causal, linked = store.graph_read(read)

    def semantic_distance(a: str, b: str) -> float:
        return 1.0 - float(ball.unit[ball.index[a]] @ ball.unit[ball.index[b]])

    spots = kernels.blind_spots(visited, semantic_distance, causal, lambda a, b: b in linked.get(a, set()),
                                float(rem["blind_spot_distance"]))
    runs: list[list[str]] = []
    run = visited[:1]
    for a, b in itertools.pairwise(visited):
        if b in linked.get(a, set()):
            run.append(b)
        else:
            if len(run) > 1:
                runs.append(run)
            run = [b]
    if len(run) > 1:
        runs.append(run)
    return WalkResult(visited, spots, runs)


def commit_blind_spots(store: MemoryStore, spots: list[tuple[str, str, str]], rem: dict[str, Any]) -> list[dict]:
    """Link each blind-spot pair (weight/confidence from the constitution, provenance "dream") in one
    transaction, unless one end is gone or they were linked meanwhile."""
    now = time.time()

    def write(g: GraphTxn) -> list[dict]:
        made = []
        for a, b, via in spots:
            if g.get(a) is None or g.get(b) is None or any(e.other(a) == b and e.type != "Temporal"
                                                            for e in g.edges(a)):
                continue
            g.put_edge(Edge(a, b, "Relational", weight=float(rem["new_edge_weight"]),
                            confidence=float(rem["new_edge_confidence"]), direction="undirected",
                            provenance="dream", created_at=now))
            made.append({"source": a, "target": b, "shared_causal_neighbour": via})
        return made

    return store.graph_write(write)


def commit_shortcuts(store: MemoryStore, tracker: ShortcutTracker, limit: int) -> list[dict]:
    """Turn up to `limit` qualifying paths not yet applied into direct edges (weight = product of the path's
    weights, confidence graph.dream.shortcut_confidence) in one transaction."""
    pending = [(p, c) for p, c in tracker.qualifying() if p not in tracker.applied][:limit]
    if not pending:
        return []
    now = time.time()

    def write(g: GraphTxn) -> list[tuple[tuple[str, ...], dict]]:
        out = []
        for path, count in pending:
            hops = [_hop(g, a, b) for a, b in itertools.pairwise(path)]
            if any(h is None for h in hops) or any(g.get(n) is None for n in (path[0], path[-1])):
                continue
            edges = [h for h in hops if h is not None]
            confidence = kernels.shortcut_confidence(count, tracker.min_traversals, tracker.min_confidence)
            if confidence < tracker.min_confidence:
                continue
            first, last = path[0], path[-1]
            if any(e.other(first) == last for e in g.edges(first)):
                out.append((path, {"source": first, "target": last, "created": False,
                                   "note": "already linked directly"}))
                continue
            causal = all(e.type == "Causal" for e in edges)
            edge = Edge(first, last, "Causal" if causal else "Relational",
                        weight=kernels.path_weight([e.weight for e in edges]), confidence=round(confidence, 6),
                        direction="forward" if causal else "undirected", amortized_shortcut=True,
                        provenance="dream_shortcut", created_at=now)
            g.put_edge(edge)
            out.append((path, {"source": first, "target": last, "created": True, "type": edge.type,
                               "weight": round(edge.weight, 6), "confidence": edge.confidence, "traversals": count}))
        return out

    made = store.graph_write(write)
    for path, edge in made:
        tracker.mark_applied(path, edge)
    return [edge for _, edge in made]


def _hop(g: GraphTxn, a: str, b: str) -> Edge | None:
    """The strongest edge between a and b (either direction, any type)."""
    found = [e for e in g.edges(a) if e.other(a) == b]
    return max(found, key=lambda e: e.weight) if found else None


def recent_sample(pool: list[str], k: int, bias: float, window: int, rng: np.random.Generator) -> list[str]:
    """`k` distinct ids of `pool` (newest first), each from its `window` newest with probability `bias`."""
    if k <= 0:
        return []
    return [pool[i] for i in kernels.recency_sample(len(pool), k, bias, window, rng)]


def public_report(report: dict[str, Any] | None) -> dict[str, Any] | None:
    """A dream's report as the status tools show it: the edge lists cut to their last ten, with their counts."""
    if report is None:
        return None
    out = dict(report)
    for key in ("blind_spot_edges", "shortcut_edges", "shared_name_edges"):
        items = out.get(key, [])
        out[key + "_count"] = len(items)
        out[key] = items[-10:]
    return out


def ago(at: float | None) -> str:
    return "never" if at is None else f"{max(0.0, time.time() - at):.0f} s ago"
