"""Graph navigation and lookup: neighbourhoods, recent context,
causal paths, entailment cones, lineage, citations and tombstones. Read-only: each call reads one consistent LMDB
snapshot in a worker thread; the path math is in graph.kernels, the cone math in graph.hyperbolic."""

from __future__ import annotations

import itertools
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import numpy as np

from contextgraph.clock import Clock
from contextgraph.constitution import Constitution
from contextgraph.errors import NodeNotFound
from contextgraph.graph import hyperbolic as hb
from contextgraph.graph.kernels import effective_weight, first_cycle, shortest_path
from contextgraph.retrieval.analyzer import term_set
from contextgraph.services.memory.curation_records import iso, record_from_doc
from contextgraph.services.memory.memory_payloads import record_summary
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import Edge, GraphTxn, MemoryRecord

_CITATION = re.compile(r"^\[node_([a-f0-9]{1,32})\]$")
_PREVIEW = 280
T = TypeVar("T")


def edge_view(edge: Edge, seen_from: str) -> dict[str, Any]:
    return {
        "edge_type": edge.type,
        "weight": edge.weight,
        "effective_weight": round(effective_weight(edge.weight, edge.excitatory, edge.inhibitory, edge.modulatory), 6),
        "confidence": edge.confidence,
        "direction": "undirected" if edge.direction == "undirected" else ("out" if edge.source == seen_from else "in"),
        "domain": edge.domain,
        "amortized_shortcut": edge.amortized_shortcut,
        "steering_reward": edge.steering_reward,
        **({"provenance": edge.provenance} if edge.provenance else {}),
    }


class GraphService:
    def __init__(self, storage: StoreHandle, constitution: Constitution, clock: Clock) -> None:
        self.storage = storage
        self.clock = clock
        self.window_s = float(constitution["curation"]["recovery_window_days"]) * 86400.0
        self.max_nodes = int(constitution["graph"]["neighborhood_max_nodes"])
        self.hierarchy = constitution["graph"]["hierarchy"]

    async def _read(self, fn: Callable[[GraphTxn], T]) -> T:
        store = (await self.storage.ready()).store
        return await anyio.to_thread.run_sync(store.graph_read, fn)

    @staticmethod
    def _require(g: GraphTxn, node_id: str) -> MemoryRecord:
        record = g.get(node_id)
        if record is None:
            hint = (" It is soft-deleted; search_tombstones finds it." if g.get_tombstone(node_id) is not None
                    else " search_graph finds memories by content.")
            raise NodeNotFound(f"No live memory has id {node_id}.{hint}", node_id=node_id)
        return record

    async def neighborhood(self, node_id: str, depth: int, edge_types: list[str] | None,
                           min_weight: float) -> dict[str, Any]:
        wanted = set(edge_types) if edge_types else None

        def fn(g: GraphTxn) -> dict[str, Any]:
            self._require(g, node_id)
            seen = {node_id}
            frontier = deque([(node_id, 0)])
            neighbours: list[dict[str, Any]] = []
            truncated = False
            while frontier:
                node, d = frontier.popleft()
                if d == depth:
                    continue
                for edge in sorted(g.edges(node), key=lambda e: -e.weight):
                    if (wanted and edge.type not in wanted) or edge.weight < min_weight:
                        continue
                    other = edge.other(node)
                    if other in seen:
                        continue
                    if len(seen) >= self.max_nodes:
                        truncated = True
                        break
                    record = g.get(other)
                    if record is None:
                        continue
                    seen.add(other)
                    neighbours.append({**record_summary(record, preview=_PREVIEW), "depth": d + 1, "via": node,
                                       **edge_view(edge, node)})
                    frontier.append((other, d + 1))
            return {"node_id": node_id, "depth": depth, "neighbors": neighbours, "count": len(neighbours),
                    "truncated": truncated}

        return await self._read(fn)

    async def recent(self, limit: int, since: float | None, session: str | None) -> dict[str, Any]:
        def fn(g: GraphTxn) -> dict[str, Any]:
            records = g.recent(limit, since, session)
            return {"memories": [{**record_summary(r, preview=_PREVIEW), "last_accessed": r.last_accessed,
                                  "access_count": r.access_count} for r in records],
                    "count": len(records), "order": "most recently stored first",
                    "session": session}

        return await self._read(fn)

    async def causal_path(self, source: str, target: str, max_hops: int, direction: str) -> dict[str, Any]:
        def fn(g: GraphTxn) -> dict[str, Any]:
            self._require(g, source)
            self._require(g, target)
            # the Causal subgraph reachable within max_hops, in the requested direction
            adjacency: dict[str, list[str]] = {}
            edges: dict[tuple[str, str], Edge] = {}
            frontier = deque([(source, 0)])
            loaded = {source}
            while frontier:
                node, d = frontier.popleft()
                nxt: list[str] = []
                candidates = []
                if direction in ("forward", "bidirectional"):
                    candidates += [(e, e.target) for e in g.edges_out(node)]
                if direction in ("backward", "bidirectional"):
                    candidates += [(e, e.source) for e in g.edges_in(node)]
                for e, other in candidates:
                    if e.type != "Causal" or other in nxt:
                        continue
                    nxt.append(other)
                    edges[(node, other)] = e
                    if other not in loaded and d + 1 < max_hops:
                        loaded.add(other)
                        frontier.append((other, d + 1))
                adjacency[node] = nxt
            if direction == "bidirectional":
                # an undirected walk would "cycle" back along the edge it came by: only report directed cycles
                cyc_adj = {n: [m for m in ms if edges[(n, m)].source == n] for n, ms in adjacency.items()}
            else:
                cyc_adj = adjacency
            path = shortest_path(adjacency, source, target, max_hops)
            cycle = first_cycle(cyc_adj, source, max_hops)
            hops = []
            for a, b in itertools.pairwise(path):
                e = edges[(a, b)]
                hops.append({"from": a, "to": b, **edge_view(e, a)})
            records = {i: self._require(g, i) for i in path}
            out: dict[str, Any] = {
                "source_id": source, "target_id": target, "direction": direction, "max_hops": max_hops,
                "found": bool(path), "path": path, "hops": hops, "length": max(0, len(path) - 1),
                "chain": " → ".join(_short(records[i].content) for i in path),
                "cycle_detected": bool(cycle),
            }
            if cycle:
                out["cycle"] = cycle  # the walk up to where it came back on itself
            if not path:
                out["message"] = f"No causal path within {max_hops} hops."
            return out

        return await self._read(fn)

    async def entailment(self, node_id: str, direction: str, space_name: str, max_results: int,
                         min_confidence: float) -> dict[str, Any]:
        """Ancestors (cones containing the node) and descendants (inside its cone) among the node's nearest
        memories in E1 (or E5/E7), mapped into a Poincaré ball by graph.hyperbolic. Bounded: one index query
        of `neighbours` and one fingerprint read, so it costs the same at 10K memories as at 100."""
        h = self.hierarchy
        space = int(space_name[1:])
        storage = await self.storage.ready()
        record = await storage.read(lambda store: store.graph_read(lambda g: self._require(g, node_id)))

        def run() -> dict[str, Any]:
            started = time.perf_counter()
            store, indexes = storage.store, storage.indexes
            indexes.catch_up(store)
            (fp,) = store.fingerprints([record.seq], spaces=[space])
            if fp is None:
                raise NodeNotFound(f"Memory {node_id} was deleted meanwhile.", node_id=node_id)
            hits = [(seq, score) for seq, score in indexes.search(space, fp[space], int(h["neighbours"]) + 1)
                    if seq != record.seq and score >= float(h["min_cosine"])]
            seqs = [record.seq] + [seq for seq, _ in hits]
            found = [(seq, r, f) for seq, r, f in zip(seqs, store.get_by_seq(seqs), store.fingerprints(seqs, [space]))
                     if r is not None and f is not None]
            records = [r for _, r, _ in found]
            vectors = np.stack([np.asarray(f[space], dtype=np.float64) for _, _, f in found])
            k = float(h["aperture_k"])
            # centrality in the whole store: each node's soft degree over its own nearest memories
            floor, m = float(h["min_cosine"]), int(h["neighbours"])
            kept = [seq for seq, _, _ in found]
            degree = [hb.soft_degree(np.array([sc for sq, sc in indexes.search(space, v.astype(np.float32), m + 1)
                                               if sq != seq]), floor) for seq, v in zip(kept, vectors)]
            general = hb.rank_generality(np.array(degree))
            points = hb.to_ball(hb.pull_to_axis(vectors, float(h["axis_pull"])), general,
                                max(float(h["r_min"]), hb.min_radius(k)), float(h["r_max"]))
            inside, confidence = hb.entailment(points, k)
            psi = hb.half_aperture(points, k)

            def listed(pairs: list[tuple[int, float]]) -> list[dict[str, Any]]:
                pairs = sorted((p for p in pairs if p[1] >= min_confidence), key=lambda p: -p[1])[:max_results]
                return [{**record_summary(records[j], preview=_PREVIEW), "confidence": round(float(c), 4),
                         "generality": round(float(general[j]), 4),
                         "poincare_norm": round(float(np.linalg.norm(points[j])), 4)} for j, c in pairs]

            n = len(records)
            out: dict[str, Any] = {
                "node_id": node_id, "direction": direction, "embedding_space": space_name,
                "node": {"generality": round(float(general[0]), 4),
                         "poincare_norm": round(float(np.linalg.norm(points[0])), 4),
                         "half_aperture_deg": round(float(np.degrees(psi[0])), 2)},
                "considered": n - 1,
            }
            if direction in ("ancestors", "both"):
                out["ancestors"] = listed([(i, confidence[i, 0]) for i in range(1, n) if inside[i, 0]])
            if direction in ("descendants", "both"):
                out["descendants"] = listed([(j, confidence[0, j]) for j in range(1, n) if inside[0, j]])
            out["method"] = (f"the {n - 1} nearest memories in {space_name} (cosine ≥ {h['min_cosine']}) mapped "
                             "into a Poincaré ball, general ones (similar to more memories) nearer the origin; "
                             f"entailment cones with K = {k} (Ganea et al. 2018); confidence = 1 − angle / "
                             "half-aperture")
            out["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 3)
            return out

        return await anyio.to_thread.run_sync(run)

    async def lineage(self, node_id: str) -> dict[str, Any]:
        def fn(g: GraphTxn) -> dict[str, Any]:
            events = g.lineage(node_id)
            record = g.get(node_id)
            tomb = g.get_tombstone(node_id)
            if not events and record is None and tomb is None:
                raise NodeNotFound(f"No memory has id {node_id}, and none ever had.", node_id=node_id)
            status = "live" if record is not None else ("tombstoned" if tomb is not None else "deleted")
            return {"node_id": node_id, "status": status, "events": events, "count": len(events)}

        return await self._read(fn)

    async def hydrate(self, tag: str) -> dict[str, Any]:
        match = _CITATION.match(tag.strip())
        if match is None:
            raise NodeNotFound(f"{tag!r} is not a citation tag; expected [node_<id or id prefix>], e.g. "
                               "[node_3fa2b1].", field="citation_tag")
        prefix = match.group(1)

        def fn(g: GraphTxn) -> dict[str, Any]:
            ids = g.ids_with_prefix(prefix, limit=2)
            if not ids:
                raise NodeNotFound(f"No live memory's id starts with {prefix}.", field="citation_tag")
            if len(ids) > 1:
                raise NodeNotFound(f"{prefix} is ambiguous: several memories' ids start with it; cite more of the "
                                   "id.", field="citation_tag", matches=ids)
            record = self._require(g, ids[0])
            return {"citation_tag": tag, "node_id": record.id, "content": record.content,
                    "rationale": record.rationale, "modality": record.modality, "tags": list(record.tags),
                    "importance": record.importance, "created_at": record.created_at, "session": record.session}

        return await self._read(fn)

    async def tombstones(self, query: str | None, deleted_after: float | None, limit: int) -> dict[str, Any]:
        now = self.clock.now()
        # the shared lexical analyzer (retrieval/analyzer.py): "invoice" finds "invoices", parse_args finds "parse
        # args"; a query of stopwords only falls back to its plain words
        terms = (set(term_set(query)) or set(re.findall(r"\w+", query.lower()))) if query else set()

        def fn(g: GraphTxn) -> dict[str, Any]:
            found = []
            for _node_id, doc in g.tombstones():
                at = doc["deleted_at"]
                if now - at > self.window_s or (deleted_after is not None and at < deleted_after):
                    continue
                record = record_from_doc(doc["record"])
                score = 1.0
                if terms:
                    text = record.content + " " + " ".join(record.tags)
                    words = term_set(text) | set(re.findall(r"\w+", text.lower()))
                    score = len(terms & words) / len(terms)
                    if score == 0:
                        continue
                found.append((score, at, {**record_summary(record, preview=_PREVIEW), "deleted_at": iso(at),
                                          "recoverable_until": iso(at + self.window_s), "reason": doc["reason"],
                                          "kind": doc["kind"], "reversal_hash": doc["reversal_hash"],
                                          "match": round(score, 4)}))
            found.sort(key=lambda x: (-x[0], -x[1]))
            items = [x[2] for x in found[:limit]]
            return {"tombstones": items, "count": len(items),
                    "matching": "share of query terms (stemmed words, identifier parts) found in the content "
                                "and tags" if terms else None}

        return await self._read(fn)


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
