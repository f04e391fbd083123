"""critique_context: checks the most recent memories, against each other and
their nearest stored memories, and says what to do about each finding.

    conflicts       the same topic or entities (E1 cosine ≥ conflict_min_e1, or E11 entity cosine ≥
                    conflict_min_e11) and a contradiction in the text (claims.contradiction: the same subject and
                    predicate with another value or polarity, or a move away from the state the other states);
                    a confirmed one says which claim holds now and forgets the other, a possible one (both
                    may hold) asks for an annotation (docs/tools.md#critique)
    duplicates      E1 cosine ≥ θ_dup (ATC's prior 0.90)
    outdated        a newer memory on the same topic (E1 cosine ≥ outdated_min_e1) or one that contradicts it
    low_confidence  an annotated confidence below the floor, or hedged wording (might, maybe, probably, TBD …)
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import anyio
import numpy as np

from contextgraph.claims.contradiction import Contradiction, contradiction
from contextgraph.constitution import Constitution
from contextgraph.services.engine.atc import domain_of
from contextgraph.services.memory.memory_payloads import record_summary
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import MemoryRecord, MemoryStore, SearchIndexes

_HEDGES = re.compile(r"\b(?:might|maybe|perhaps|possibly|probably|i\s+think|i\s+guess|not\s+sure|unsure|unverified|"
                     r"unconfirmed|tbd|todo|guess(?:ing)?|rumou?r)\b|\?\s*$", re.I)


class Critique:
    def __init__(self, storage: StoreHandle, constitution: Constitution,
                 duplicate_threshold: Callable[[str], float] | None = None) -> None:
        self.storage = storage
        r = constitution["reflection"]
        self.min_e1 = float(r["conflict_min_e1"])
        self.min_e11 = float(r["conflict_min_e11"])
        self.outdated_e1 = float(r["outdated_min_e1"])
        self.k = int(r["neighbours"])
        self.low = float(r["low_confidence"])
        prior = float(constitution["atc"]["priors"]["theta_dup"])
        # θ_dup per domain: ATC's learned value (tools/metacog.py passes it), the constitution's prior without it
        self.theta_dup_of = duplicate_threshold or (lambda _domain: prior)

    async def critique(self, window: int, checks: list[str]) -> dict[str, Any]:
        storage = await self.storage.ready()
        store, indexes = storage.store, storage.indexes

        def run() -> dict[str, Any]:
            recent: list[MemoryRecord] = store.graph_read(lambda g: g.recent(window, None, None))
            if not recent:
                return {"examined": 0, "findings": {c: [] for c in checks},
                        "message": "No memories yet: nothing to critique."}
            records, vectors, pairs = self._pairs(store, indexes, recent)
            findings: dict[str, list[dict[str, Any]]] = {c: [] for c in checks}
            for a, b in sorted(pairs):
                if a in vectors and b in vectors:
                    self._judge(records[a], records[b], vectors[a], vectors[b], checks, findings)
            if "low_confidence" in checks:
                findings["low_confidence"] = [f for r in recent if (f := self._low_confidence(r)) is not None]
            total = sum(len(v) for v in findings.values())
            return {"examined": len(recent), "compared_pairs": len(pairs), "findings": findings,
                    "counts": {c: len(v) for c, v in findings.items()}, "total": total,
                    "message": "Nothing to fix in the recent context." if total == 0 else
                               f"{total} finding(s); each carries the tool call that resolves it."}

        return await anyio.to_thread.run_sync(run)

    def _pairs(self, store: MemoryStore, indexes: SearchIndexes, recent: list[MemoryRecord],
               ) -> tuple[dict[str, MemoryRecord], dict[str, tuple[np.ndarray, np.ndarray]], set[tuple[str, str]]]:
        """The pairs to judge: every two recent memories, and each recent memory with its `k` nearest stored
        ones (E1); with every memory involved and its unit E1 and E11 vectors."""
        records = {r.id: r for r in recent}
        fps = dict(zip([r.id for r in recent], store.fingerprints([r.seq for r in recent], spaces=[1, 11])))
        pairs: set[tuple[str, str]] = set(itertools.combinations(sorted(records), 2))
        for r in recent:
            fp = fps.get(r.id)
            if fp is None:
                continue
            hits = [seq for seq, _ in indexes.search(1, fp[1], self.k + 1) if seq != r.seq][: self.k]
            for other, ofp in zip(store.get_by_seq(hits), store.fingerprints(hits, spaces=[1, 11])):
                if other is not None and ofp is not None and other.id != r.id:
                    records.setdefault(other.id, other)
                    fps.setdefault(other.id, ofp)
                    pairs.add((r.id, other.id) if r.id < other.id else (other.id, r.id))
        vectors = {i: (_unit(fp[1]), _unit(fp[11])) for i, fp in fps.items() if fp is not None}
        return records, vectors, pairs

    def _judge(self, ra: MemoryRecord, rb: MemoryRecord, va: tuple[np.ndarray, np.ndarray],
               vb: tuple[np.ndarray, np.ndarray], checks: list[str], findings: dict[str, list[dict[str, Any]]],
               ) -> None:
        """One pair's finding, if any: a conflict (same topic, contradicting claims), else a duplicate, else an
        outdated memory (a newer one on the same topic)."""
        older, newer = (ra, rb) if ra.created_at <= rb.created_at else (rb, ra)
        theta_dup = self.theta_dup_of(domain_of(newer))  # the newer one is the copy merge_concepts would fold in
        e1 = float(va[0] @ vb[0])
        e11 = float(va[1] @ vb[1])
        same_topic = e1 >= self.min_e1 or e11 >= self.min_e11
        found = contradiction(older.content, newer.content) if same_topic else None
        if found is not None:
            conflict = _conflict(older, newer, found, e1, e11)
            if "conflicts" in checks:
                findings["conflicts"].append(conflict)
            if "outdated" in checks and conflict["confirmed"]:
                findings["outdated"].append(self._outdated(older, newer, e1, "contradicted by a newer claim"))
        elif "duplicates" in checks and e1 >= theta_dup:
            findings["duplicates"].append({
                "memories": [_brief(older), _brief(newer)], "e1_cosine": round(e1, 4),
                "evidence": f"E1 cosine {e1:.3f} ≥ θ_dup {theta_dup:.4g}",
                "action": {"tool": "merge_concepts", "source_node_ids": [older.id, newer.id],
                           "why": "two copies of one memory split its edges and its importance"}})
        elif "outdated" in checks and self.outdated_e1 <= e1 < theta_dup:
            findings["outdated"].append(self._outdated(older, newer, e1, "a newer memory on the same topic"))

    def _low_confidence(self, r: MemoryRecord) -> dict[str, Any] | None:
        """A memory whose own annotation or wording says it is unsure, with why."""
        reasons = []
        confidence = (r.extra.get("annotations") or {}).get("confidence")
        if confidence is not None and float(confidence) < self.low:
            reasons.append(f"annotated confidence {confidence} < {self.low}")
        hedge = _HEDGES.search(r.content)
        if hedge:
            reasons.append(f"hedged wording: '{hedge.group(0).strip()}'")
        if not reasons:
            return None
        return {"memory": _brief(r), "evidence": "; ".join(reasons),
                "action": {"tool": "annotate_node", "node_id": r.id,
                           "why": "confirm it and record the confidence, or forget_concept it"}}

    @staticmethod
    def _outdated(older: MemoryRecord, newer: MemoryRecord, e1: float, why: str) -> dict[str, Any]:
        return {"memory": _brief(older), "superseded_by": _brief(newer), "e1_cosine": round(e1, 4),
                "evidence": f"{why} (stored {newer.created_at - older.created_at:.0f} s later, E1 {e1:.3f})",
                "action": {"tool": "forget_concept", "node_id": older.id, "reason": "obsolete",
                           "why": "or merge_concepts the two if both still hold"}}


def _conflict(older: MemoryRecord, newer: MemoryRecord, found: Contradiction, e1: float, e11: float,
              ) -> dict[str, Any]:
    """A conflict finding. Confirmed: forget the claim that no longer holds, naming the one that does (a move
    says which; otherwise the one stored later). A move stored before the claim it moved away from, or two
    values a predicate may hold at once, is only possible: annotate_node asks which holds."""
    confirmed = found.confirmed
    current, stale = newer, older
    if found.newer is not None:  # a move: the side that moved on holds now, whenever it was stored
        current, stale = (older, newer) if found.newer == "a" else (newer, older)
        confirmed = confirmed and current is newer
    out: dict[str, Any] = {
        "memories": [_brief(older), _brief(newer)], "kind": found.kind, "confirmed": confirmed,
        "e1_cosine": round(e1, 4), "e11_cosine": round(e11, 4),
        "evidence": f"same topic (E1 {e1:.3f}, E11 entities {e11:.3f}) and {found.kind}: {found.evidence}"}
    if confirmed:
        out["stale"], out["current"] = stale.id, current.id
        # a moved-on state was true once (obsolete); of two values or polarities one is wrong (incorrect)
        reason = "obsolete" if found.kind == "supersession" else "incorrect"
        out["action"] = {"tool": "forget_concept", "node_id": stale.id, "reason": reason, "keep": current.id,
                         "why": f"'{_short(current.content)}' is the newer claim "
                                f"({'it states the move' if found.newer else 'stored later'}); forget the "
                                f"other unless you know it still holds"}
    else:
        out["stale"] = out["current"] = None
        out["action"] = {"tool": "annotate_node", "node_id": older.id,
                         "why": "both may hold: annotate each with its scope or confidence, or forget_concept "
                                "the one that is wrong"}
    return out


def _unit(v: Any) -> np.ndarray:
    x = np.asarray(v, dtype=np.float64)
    n = float(np.linalg.norm(x))
    return x / n if n else x


def _brief(record: MemoryRecord) -> dict[str, Any]:
    summary = record_summary(record, preview=160)
    return {k: summary[k] for k in ("id", "content", "created_at", "importance")}


def _short(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"

