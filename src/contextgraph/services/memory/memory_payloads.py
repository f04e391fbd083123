"""What the memory use-cases take and give: a memory to store, and the payloads of store_memory, inject_context
and search_graph, shaped for the tool handlers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contextgraph.fingerprint import SPACES
from contextgraph.services.memory.search import Retrieval
from contextgraph.storage.base import MemoryRecord


@dataclass(frozen=True, slots=True)
class NewMemory:
    content: str
    rationale: str
    modality: str = "text"
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    link_to: tuple[str, ...] = ()
    session: str = "local"


def record_summary(record: MemoryRecord, preview: int | None = None) -> dict[str, Any]:
    content = record.content if preview is None or len(record.content) <= preview else record.content[:preview] + "…"
    summary = {
        "id": record.id,
        "content": content,
        "modality": record.modality,
        "tags": list(record.tags),
        "importance": record.importance,
        "created_at": record.created_at,
        "session": record.session,
    }
    if (record.extra.get("adversarial") or {}).get("flagged"):
        summary["quarantined"] = True  # flagged by the store-time screen: never injected into hook context
    return summary


@dataclass
class Stored:
    record: MemoryRecord
    redactions: list[str]
    timings_ms: dict[str, float]
    deduplicated: bool = False  # a retry: the memory this content and session already had (store_retries)

    def payload(self) -> dict[str, Any]:
        r = self.record
        payload = {
            "id": r.id,
            "fingerprintId": r.id,
            "stored": True,
            "durable": True,
            "session": r.session,
            "modality": r.modality,
            "importance": r.importance,
            "tags": list(r.tags),
            "links": list(r.links),
            "created_at": r.created_at,
            "redacted": sorted(set(self.redactions)),
            "timings_ms": self.timings_ms,
        }
        if self.redactions:
            payload["message"] = (f"{len(self.redactions)} secret(s) were replaced by [REDACTED:type] before "
                                  "anything was embedded or stored.")
        if self.deduplicated:
            payload["deduplicated"] = True
            payload["message"] = ("This content was stored in this session moments ago: that memory is returned "
                                  "instead of a second copy.")
        return payload


@dataclass
class Injected:
    stored: Stored
    utl: dict[str, Any]
    related: list[dict[str, Any]]
    related_unavailable: bool = False  # stored, but the store could not be read for them after the commit

    def payload(self) -> dict[str, Any]:
        payload = {**self.stored.payload(), "utl": self.utl, "related": self.related}
        if self.related_unavailable:
            payload["related_unavailable"] = True
            payload["message"] = ("Stored and durable; the related memories could not be read just after (the "
                                  "store failed then). Search for them once it is back; do not store this again.")
        return payload


@dataclass
class Searched:
    query: str
    retrieval: Retrieval
    breakdown: bool
    embed_ms: float
    redactions: list[str] = field(default_factory=list)
    # retrieval.relevance_floor: when no result is at least this similar (E1) to the query, the answer says that
    # nothing relevant was found; the results stay, ranked as they are
    relevance_floor: float = 0.0

    def payload(self) -> dict[str, Any]:
        results = []
        for f in self.retrieval.found:
            item = {**record_summary(f.record), "score": f.score, "similarity": f.similarity}
            if self.breakdown:
                item["space_ranks"] = {SPACES[s - 1].name: rank for s, rank in sorted(f.space_ranks.items())}
                # each space's RRF vote w/(k + rank) for this result, with the weights serotonin set
                weights, k = self.retrieval.weights, self.retrieval.rrf_k
                item["space_contributions"] = {SPACES[s - 1].name: round(weights[s] / (k + rank), 6)
                                               for s, rank in sorted(f.space_ranks.items()) if weights.get(s)}
            results.append(item)
        best = max((r["similarity"] for r in results), default=0.0)
        payload: dict[str, Any] = {"query": self.query, "results": results, "count": len(results),
                                   "nothing_relevant": best < self.relevance_floor}
        if results and payload["nothing_relevant"]:
            payload["relevance"] = (
                f"Nothing relevant found: no result is close in meaning to the query (best similarity {best:.2f}, "
                f"below {self.relevance_floor:g}). These are the nearest memories, not answers: the memory "
                "holds nothing about this yet, or holds it in other words.")
        note = self.retrieval.stage4.get("note")
        if note:  # stage 4 changed this answer: the default answer says so in one line
            payload["stage4_note"] = note
        if self.retrieval.modulation_notes:  # a neuromodulator changed this answer: one line each
            payload["modulation_note"] = "; ".join(self.retrieval.modulation_notes)
        if self.breakdown:
            payload["stages_ms"] = {"embed_query": self.embed_ms, **self.retrieval.stages_ms}
            payload["candidates"] = self.retrieval.candidates
            payload["stage4"] = self.retrieval.stage4
            payload["space_weights"] = {SPACES[s - 1].name: round(w, 6)
                                        for s, w in sorted(self.retrieval.weights.items())}
            payload["rrf_k"] = self.retrieval.rrf_k
        if not results:
            payload["message"] = ("Nothing matched. Try other words, lower min_similarity, or drop the modality "
                                  "filter." if self.retrieval.candidates else "The memory is empty or nothing "
                                  "shares a word or meaning with the query yet.")
        return payload
