"""Curation use-cases (docs/tools.md#curation): forget (tombstone with 30-day undo), restore, annotate, boost, merge.

Every operation is ONE LMDB write transaction run on the writer thread (GraphTxn): the record, fingerprint,
edge, tombstone, reversal and lineage changes of one call commit together or not at all, so a crash leaves the
before or the after state, never a mix. Deletes and restores write oplog entries, so every process's search
indexes catch up (a forgotten memory leaves every space; a restored one comes back in every space).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any, TypeVar, cast

import anyio
import numpy as np

from contextgraph.clock import Clock
from contextgraph.constitution import Constitution
from contextgraph.errors import (
    InvalidParams,
    NodeNotFound,
    PriorsIncompatible,
    RecoveryWindowExpired,
    SemanticCancerDetected,
    TombstoneExists,
)
from contextgraph.graph.kernels import neighbour_entropy, reversal_hash
from contextgraph.log import get_logger
from contextgraph.services.engine.atc import domain_of
from contextgraph.services.memory.curation_records import (
    SUMMARIZE_METHOD,
    extractive_summary,
    iso,
    record_doc,
    record_from_doc,
)
from contextgraph.services.runtime import operation_pulse
from contextgraph.services.runtime.e8_refresh import EdgeWatch
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.services.runtime.tombstones import purge_expired
from contextgraph.storage.base import Edge, GraphTxn, MemoryRecord
from contextgraph.storage.codec import encode_fingerprint

_log = get_logger("curation")
T = TypeVar("T")


class CurationService:
    def __init__(self, storage: StoreHandle, perception: Perception, constitution: Constitution, clock: Clock,
                 observe_outcome: Callable[[str, str, float, float, str], None] | None = None,
                 duplicate_threshold: Callable[[str], float] | None = None) -> None:
        self.storage = storage
        self.perception = perception  # a merge embeds its combined content
        self.clock = clock
        c = constitution["curation"]
        self.window_s = float(c["recovery_window_days"]) * 86400.0
        self.priors_min = float(c["priors_min_cosine"])
        self.cancer_importance = float(c["semantic_cancer"]["importance"])
        self.cancer_entropy = float(c["semantic_cancer"]["neighbour_entropy"])
        self.neighbour_k = int(c["neighbour_k"])
        self.separator = str(c["merge_separator"])
        self.link_weight = float(constitution["graph"]["merge_link_weight"])
        v = constitution["validation"]  # what one memory holds in all: annotations and merges add up
        self.max_tags = int(v["tags"]["max_items"])
        self.max_concepts = int(v["related_concepts"]["max_items"])
        self.max_content = int(v["content"]["max_length"])
        # ATC, attached by the composition root: the outcome of each θ_dup decision a merge confirms (threshold,
        # domain, score, outcome, source), and θ_dup per domain for those who decide with it (pruning); the prior
        self.observe_outcome = observe_outcome or (lambda *_: None)
        self.duplicate_threshold = duplicate_threshold or (lambda _d, p=constitution["atc"]["priors"]["theta_dup"]: p)

    # -- plumbing ----------------------------------------------------------------------------------------------
    async def _write(self, fn: Callable[[GraphTxn], T]) -> T:
        storage = await self.storage.ready()
        now = self.clock.now()

        def purge_then(g: GraphTxn) -> tuple[T, dict[str, None]]:
            watched = EdgeWatch(g)  # the memories whose edges this operation changes, for their E8
            purge_expired(cast(GraphTxn, watched), now, self.window_s)  # what has outlived its window goes first
            return fn(cast(GraphTxn, watched)), watched.touched

        result, touched = await storage.writer.submit(lambda: storage.store.graph_write(purge_then))
        # bring this process's indexes up to date now (deletes leave every space, restores come back)
        await anyio.to_thread.run_sync(storage.indexes.catch_up, storage.store)
        storage.refresh_e8(touched)
        return result

    @staticmethod
    def _require(g: GraphTxn, node_id: str) -> MemoryRecord:
        record = g.get(node_id)
        if record is not None:
            return record
        if g.get_tombstone(node_id) is not None:
            raise NodeNotFound(f"Memory {node_id} is soft-deleted; restore_from_hash with its reversal_hash brings "
                               "it back (search_tombstones finds it).", node_id=node_id, tombstoned=True)
        raise NodeNotFound(f"No memory has id {node_id}. search_graph finds memories by content.", node_id=node_id)

    def _tombstone(self, g: GraphTxn, node_id: str, now: float, h: str, kind: str, reason: str, rationale: str) -> None:
        record, blob, edges = g.delete_memory(node_id)
        doc = {"record": record_doc(record), "edges": [dataclasses.asdict(e) for e in edges], "deleted_at": now,
               "reversal_hash": h, "kind": kind, "reason": reason, "rationale": rationale}
        g.put_tombstone(node_id, doc, blob)

    # -- forget / restore --------------------------------------------------------------------------------------
    async def forget(self, node_id: str, *, reason: str, soft: bool, rationale: str) -> dict[str, Any]:
        if not soft and reason != "user_requested":
            raise InvalidParams("A hard delete (soft_delete=false) is allowed only with reason='user_requested'; "
                                "leave soft_delete true for a 30-day undo.", field="soft_delete",
                                allowed_reasons=["user_requested"])
        now = self.clock.now()

        def fn(g: GraphTxn) -> dict[str, Any]:
            if (tombstone := g.get_tombstone(node_id)) is not None:
                raise TombstoneExists(f"Memory {node_id} is already soft-deleted.", node_id=node_id,
                                      reversal_hash=tombstone[0]["reversal_hash"])
            self._require(g, node_id)
            event: dict[str, Any] = {"event": "forgotten" if soft else "hard_deleted", "at": now, "reason": reason,
                                     "rationale": rationale}
            if soft:
                op = {"op": "forget", "ids": [node_id], "at": now}
                h = reversal_hash(op)
                self._tombstone(g, node_id, now, h, "forget", reason, rationale)
                g.put_reversal(h, op)
                event["reversal_hash"] = h
            else:
                g.delete_memory(node_id)
                g.delete_triples(node_id)
                h = None
            g.append_lineage(node_id, event)
            return {"node_id": node_id, "soft_deleted": soft, "reason": reason, "reversal_hash": h,
                    "deleted_at": iso(now),
                    "recoverable_until": iso(now + self.window_s) if soft else None}

        # D16: the forgotten memory's UTL against the rest moves the pulse; scored while it is still there
        scored = await operation_pulse.score_stored(self.storage, self.perception, [node_id])
        out = await self._write(fn)
        operation_pulse.fold(self.storage, scored, added=-1)  # scored with it still counted
        _log.info("memory forgotten", id=node_id, soft=soft, reason=reason)
        return out

    async def restore(self, h: str) -> dict[str, Any]:
        now = self.clock.now()

        def fn(g: GraphTxn) -> dict[str, Any]:
            op = g.get_reversal(h)
            if op is None:
                raise NodeNotFound("No undoable operation has this reversal_hash (it was restored already, or "
                                   "never existed). search_tombstones lists what can be restored.",
                                   field="reversal_hash")
            if now - op["at"] > self.window_s:
                raise RecoveryWindowExpired(
                    f"The recovery window has passed: the operation was done at {iso(op['at'])}, more than "
                    f"{self.window_s / 86400:g} days ago.", deleted_at=iso(op["at"]), node_ids=op.get("ids"))
            removed: list[str] = []
            if op["op"] == "merge" and g.exists(op["merged_id"]):
                g.delete_memory(op["merged_id"])
                g.delete_triples(op["merged_id"])
                g.append_lineage(op["merged_id"], {"event": "unmerged", "at": now, "reversal_hash": h})
                removed.append(op["merged_id"])
            if op["op"] == "link":
                for s, t, typ in op["edges"]:
                    edge = g.get_edge(s, t, typ)
                    if edge is not None:
                        g.delete_edge(edge)
            restored: list[str] = []
            edges = 0
            for node_id in op["ids"] if op["op"] != "link" else []:
                tomb = g.get_tombstone(node_id)
                if tomb is None:
                    continue
                doc, blob = tomb
                g.restore_memory(record_from_doc(doc["record"]), blob)
                for e in doc["edges"]:
                    edge = Edge(**e)
                    if g.exists(edge.other(node_id)) or edge.other(node_id) == node_id:
                        g.put_edge(edge)
                        edges += 1
                g.delete_tombstone(node_id)
                g.append_lineage(node_id, {"event": "restored", "at": now, "reversal_hash": h})
                restored.append(node_id)
            g.delete_reversal(h)
            return {"reversal_hash": h, "operation": op["op"], "restored": restored, "removed": removed,
                    "edges_restored": edges, "done_at": iso(op["at"]), "ids": list(op["ids"])}

        out = await self._write(fn)
        ids = out.pop("ids")
        await operation_pulse.fold_stored(self.storage, self.perception, out["restored"] or ids)  # D16
        return out

    # -- annotate / boost --------------------------------------------------------------------------------------
    async def annotate(self, node_id: str, annotations: dict[str, Any]) -> dict[str, Any]:
        now = self.clock.now()

        def fn(g: GraphTxn) -> dict[str, Any]:
            record = self._require(g, node_id)
            added = [t.strip() for t in annotations.get("tags") or [] if t.strip()]
            tags = tuple(dict.fromkeys([*record.tags, *added]))
            current = dict(record.extra.get("annotations") or {})
            for key in ("domain", "confidence", "notes"):
                if annotations.get(key) is not None:
                    current[key] = annotations[key]
            related = list(annotations.get("related_concepts") or [])
            if related:
                current["related_concepts"] = list(dict.fromkeys([*current.get("related_concepts", []), *related]))
            if added:  # a memory merged from many may hold more already: only what adds to it is refused
                _within(node_id, "tags", len(tags), self.max_tags)
            if related:
                _within(node_id, "related_concepts", len(current["related_concepts"]), self.max_concepts)
            linked = []
            for other in related:  # a related concept that names a memory becomes a Relational edge
                if other != node_id and g.exists(other) and g.get_edge(node_id, other, "Relational") is None:
                    g.put_edge(Edge(node_id, other, "Relational", weight=1.0, direction="undirected",
                                    domain=current.get("domain", "General"), created_at=now))
                    linked.append(other)
            new = g.update(dataclasses.replace(record, tags=tags, updated_at=now,
                                               extra={**record.extra, "annotations": current}))
            g.append_lineage(node_id, {"event": "annotated", "at": now, "fields": sorted(annotations)})
            return {"node_id": node_id, "tags": list(new.tags), "annotations": current, "linked": linked,
                    "embeddings_changed": False}

        out = await self._write(fn)
        await operation_pulse.fold_stored(self.storage, self.perception, [node_id])  # D16, its new edges counted
        return out

    async def neighbour_entropy(self, record: MemoryRecord) -> float:
        store, indexes = self.storage.store, self.storage.indexes

        def run() -> float:
            (fp,) = store.fingerprints([record.seq], spaces=[1])
            if fp is None:
                raise NodeNotFound(f"Memory {record.id} was deleted meanwhile.", node_id=record.id)
            hits = indexes.search(1, fp[1], self.neighbour_k + 1)
            return neighbour_entropy([s for seq, s in hits if seq != record.seq][: self.neighbour_k])

        return await anyio.to_thread.run_sync(run)

    async def boost(self, node_id: str, delta: float, rationale: str) -> dict[str, Any]:
        record = await self.storage.read(lambda store: store.graph_read(lambda g: self._require(g, node_id)))
        entropy = await self.neighbour_entropy(record)
        projected = min(1.0, max(0.0, record.importance + delta))
        # docs/tools.md: a node made dominant while unlike its neighbourhood is semantic cancer; lowering is always fine
        if delta > 0 and projected > self.cancer_importance and entropy > self.cancer_entropy:
            raise SemanticCancerDetected(
                f"Raising {node_id} to importance {projected:.2f} would make an isolated memory dominant: its "
                f"neighbour entropy is {entropy:.2f} (> {self.cancer_entropy}) and the importance would exceed "
                f"{self.cancer_importance}.", node_id=node_id, importance=projected,
                neighbour_entropy=round(entropy, 4))
        now = self.clock.now()

        def fn(g: GraphTxn) -> dict[str, Any]:
            current = self._require(g, node_id)
            new_importance = min(1.0, max(0.0, current.importance + delta))
            g.update(dataclasses.replace(current, importance=new_importance, updated_at=now))
            g.append_lineage(node_id, {"event": "importance_changed", "at": now, "from": current.importance,
                                       "to": new_importance, "rationale": rationale})
            return {"node_id": node_id, "previous_importance": current.importance, "importance": new_importance,
                    "delta": delta, "clamped": new_importance != current.importance + delta,
                    "neighbour_entropy": round(entropy, 4)}

        out = await self._write(fn)
        await operation_pulse.fold_stored(self.storage, self.perception, [node_id])  # D16, wₑ from the new importance
        return out

    # -- merge -------------------------------------------------------------------------------------------------
    async def merge(self, ids: list[str], *, target_name: str, strategy: str, rationale: str,
                    force: bool) -> dict[str, Any]:
        await self.storage.ready()
        ids = list(dict.fromkeys(ids))
        if len(ids) < 2:
            raise InvalidParams("merge_concepts needs at least two distinct source_node_ids.", field="source_node_ids")
        records: list[MemoryRecord] = await self.storage.read(
            lambda s: s.graph_read(lambda g: [self._require(g, i) for i in ids]))
        vectors = [np.asarray(fp[1], dtype=np.float64)
                   for fp in await self.storage.read(lambda s: s.fingerprints([r.seq for r in records], [1]))
                   if fp is not None]
        unit = [v / (np.linalg.norm(v) or 1.0) for v in vectors]
        min_cos = min(float(unit[i] @ unit[j]) for i in range(len(unit)) for j in range(i + 1, len(unit)))
        now = self.clock.now()
        if min_cos < self.priors_min:
            if not force:
                raise PriorsIncompatible(
                    f"The nodes' priors are incompatible: lowest pairwise E1 cosine {min_cos:.3f} < "
                    f"{self.priors_min}. Review them, or pass force_merge=true to link them with Relational edges "
                    "instead of merging.", min_cosine=round(min_cos, 4), threshold=self.priors_min)
            linked = await self._link(ids, min_cos, rationale, now)
            self._duplicate_outcomes(records, unit, 0.0, "force_merge linked them instead of merging")
            return linked
        ordered = sorted(records, key=lambda r: -r.importance)
        if strategy == "keep_highest":
            content = ordered[0].content
        elif strategy == "concatenate":
            content = self.separator.join(r.content for r in records)
        else:
            content = extractive_summary([r.content for r in records])
        if len(content) > self.max_content:  # before anything is embedded or written
            raise InvalidParams(
                f"merge_concepts ({strategy}) would make a memory of {len(content)} characters; a memory holds at "
                f"most {self.max_content}. Use summarize or keep_highest, or merge fewer. Nothing was changed.",
                field="merge_strategy", max_length=self.max_content)
        tags = tuple(dict.fromkeys(t for r in records for t in r.tags))
        head = ordered[0]
        (fingerprint,), (triples,) = await self.perception.embed_texts([content], head.modality, head.session)
        blob = encode_fingerprint(fingerprint)
        pipeline = await self.perception.pipeline()
        # D16: the merged memory against the store as it is before the merge (its sources still in it), so
        # merging duplicates scores near-zero novelty and the pulse's entropy falls
        utl = await anyio.to_thread.run_sync(
            lambda: operation_pulse.score(self.storage, pipeline.embedders, fingerprint,
                                          importance=max(r.importance for r in records)), limiter=self.perception.reads)
        merged_id = uuid.uuid4().hex
        op = {"op": "merge", "ids": ids, "merged_id": merged_id, "at": now}
        h = reversal_hash(op)
        merged = MemoryRecord(
            id=merged_id, content=content, rationale=rationale, modality=head.modality, session=head.session,
            created_at=now, updated_at=now, importance=max(r.importance for r in records),
            tags=tags[: self.max_tags],  # the first sources' first: what the bound leaves out is named in the answer
            redactions=tuple(dict.fromkeys(x for r in records for x in r.redactions)),
            session_position=head.session_position,
            extra={"name": target_name, "merged_from": ids, "merge_strategy": strategy},
        )
        source_set = set(ids)

        def fn(g: GraphTxn) -> dict[str, Any]:
            for i in ids:
                self._require(g, i)  # still there: nothing was forgotten or merged meanwhile
            inherited: dict[tuple[str, str, str], Edge] = {}
            for i in ids:
                for e in g.edges(i):
                    s = merged_id if e.source in source_set else e.source
                    t = merged_id if e.target in source_set else e.target
                    if s == t:
                        continue  # an edge between two sources collapses into the merged node
                    key = (s, t, e.type)
                    if key not in inherited or e.weight > inherited[key].weight:
                        inherited[key] = dataclasses.replace(e, source=s, target=t)
                self._tombstone(g, i, now, h, "merge", "merged", rationale)
                g.append_lineage(i, {"event": "merged_into", "at": now, "into": merged_id, "reversal_hash": h,
                                     "rationale": rationale})
            g.restore_memory(merged, blob)
            if triples:  # the merged text's own relation triples (E11's TransE)
                g.put_triples(merged_id, triples)
            for e in inherited.values():
                g.put_edge(e)
            g.put_reversal(h, op)
            g.append_lineage(merged_id, {"event": "created_by_merge", "at": now, "sources": ids,
                                         "strategy": strategy, "rationale": rationale, "reversal_hash": h})
            return {"merged": True, "merged_id": merged_id, "target_name": target_name, "strategy": strategy,
                    "content": content, "sources": ids, "inherited_edges": len(inherited), "reversal_hash": h,
                    "min_prior_cosine": round(min_cos, 4),
                    **({"summary_method": SUMMARIZE_METHOD} if strategy == "summarize" else {}),
                    **({"tags_dropped": list(tags[self.max_tags:])} if len(tags) > self.max_tags else {})}

        out = await self._write(fn)
        operation_pulse.fold(self.storage, [utl], added=1 - len(ids))  # measured before the sources went
        _log.info("memories merged", merged_id=merged_id, sources=len(ids), strategy=strategy)
        self._duplicate_outcomes(records, unit, 1.0, "merged by merge_concepts")
        return out

    def _duplicate_outcomes(self, records: list[MemoryRecord], unit: list[np.ndarray], outcome: float,
                            source: str) -> None:
        """θ_dup's observed outcomes (services.atc): every source pair's E1 cosine, confirmed or refuted."""
        domain = domain_of(records[0])
        for i in range(len(unit)):
            for j in range(i + 1, len(unit)):
                self.observe_outcome("theta_dup", domain, float(unit[i] @ unit[j]), outcome, source)

    async def _link(self, ids: list[str], min_cos: float, rationale: str, now: float) -> dict[str, Any]:
        """force_merge over incompatible priors (docs/tools.md): keep both nodes, join them with Relational edges."""
        pairs = [(ids[i], ids[i + 1]) for i in range(len(ids) - 1)]
        op = {"op": "link", "ids": ids, "edges": [[s, t, "Relational"] for s, t in pairs], "at": now}
        h = reversal_hash(op)

        def fn(g: GraphTxn) -> dict[str, Any]:
            for i in ids:
                self._require(g, i)
            for s, t in pairs:
                g.put_edge(Edge(s, t, "Relational", weight=self.link_weight, confidence=max(0.0, min_cos),
                                direction="undirected", created_at=now))
            for i in ids:
                g.append_lineage(i, {"event": "linked_instead_of_merged", "at": now, "with": [x for x in ids if x != i],
                                     "rationale": rationale, "reversal_hash": h})
            g.put_reversal(h, op)
            return {"merged": False, "linked": True, "sources": ids, "edges_created": len(pairs),
                    "min_prior_cosine": round(min_cos, 4), "reversal_hash": h,
                    "message": "Priors are incompatible; force_merge linked the nodes with Relational edges "
                               "instead of merging them."}

        out = await self._write(fn)
        await operation_pulse.fold_stored(self.storage, self.perception, ids)  # D16
        return out


def _within(node_id: str, field: str, count: int, bound: int) -> None:
    """Refuse (before anything is written) an annotation that would leave the memory more than `bound` of them."""
    if count > bound:
        raise InvalidParams(f"annotate_node would give memory {node_id} {count} {field}; a memory holds at most "
                            f"{bound}. Nothing was changed.", field=f"annotations.{field}", max_items=bound)
