"""homeostatic_status: the importance distribution and the
multiplicative scaling that would bring its mean back to the set point (synaptic scaling), semantic-cancer
detections (importance > 0.9 and neighbour entropy > 0.8) and the quarantine list (memories the store-time
adversarial screen flagged). Read-only: it reports and recommends; boost_importance and forget_concept act.

Bounded: the distribution is read from the `window` most recent memories (the whole store below that size), and
neighbour entropy is computed only for the memories above the cancer importance (one E1 index query each).
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.graph.kernels import neighbour_entropy
from contextgraph.services.memory.adversarial import QUARANTINE_DOC
from contextgraph.services.memory.memory_payloads import record_summary
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import GraphTxn


class Homeostasis:
    def __init__(self, storage: StoreHandle, constitution: Constitution) -> None:
        self.storage = storage
        h = constitution["homeostasis"]
        self.window = int(h["window"])
        self.target = float(h["target_mean_importance"])
        self.tolerance = float(h["tolerance"])
        self.bins = int(h["histogram_bins"])
        c = constitution["curation"]
        self.cancer_importance = float(c["semantic_cancer"]["importance"])
        self.cancer_entropy = float(c["semantic_cancer"]["neighbour_entropy"])
        self.cancer_cut = float(c["semantic_cancer"]["importance_cut"])
        self.neighbour_k = int(c["neighbour_k"])

    async def status(self) -> dict[str, Any]:
        storage = await self.storage.ready()
        store, indexes = storage.store, storage.indexes

        def run() -> dict[str, Any]:
            def read(g: GraphTxn) -> tuple[list[Any], int]:
                return g.recent(self.window, None, None), store.count()

            records, count = store.graph_read(read)
            importance = np.array([r.importance for r in records], dtype=np.float64)
            distribution = self._distribution(importance, count)
            suspects = [r for r in records if r.importance > self.cancer_importance]
            detections = []
            for record, fp in zip(suspects, store.fingerprints([r.seq for r in suspects], spaces=[1])):
                if fp is None:
                    continue
                hits = [s for seq, s in indexes.search(1, fp[1], self.neighbour_k + 1) if seq != record.seq]
                entropy = neighbour_entropy(hits[: self.neighbour_k])
                if entropy > self.cancer_entropy:
                    cut = round(record.importance * self.cancer_cut, 4)
                    detections.append({**record_summary(record, preview=160), "neighbour_entropy": round(entropy, 4),
                                       "recommended": {"tool": "boost_importance", "node_id": record.id,
                                                       "delta": -min(0.5, round(record.importance - cut, 4)),
                                                       "why": f"importance {record.importance} on a memory unlike "
                                                              f"its neighbours: cut it by {int(self.cancer_cut * 100)}"
                                                              " %"}})
            doc = store.get_document(QUARANTINE_DOC) or {"memories": []}
            quarantine = []
            for entry in doc["memories"]:
                record = store.get(entry["id"])
                if record is None:
                    continue  # forgotten since: no longer quarantined
                flags = (record.extra.get("adversarial") or {}).get("findings") or []
                quarantine.append({**record_summary(record, preview=160), "flagged_at": entry["at"],
                                   "findings": flags})
            return {"importance": distribution, "semantic_cancer": {
                        "rule": f"importance > {self.cancer_importance} and neighbour entropy > {self.cancer_entropy} "
                                f"(1 − mean E1 cosine to the {self.neighbour_k} nearest)",
                        "examined": len(suspects), "detections": detections, "count": len(detections)},
                    "quarantine": {"memories": quarantine, "count": len(quarantine),
                                   "meaning": "flagged by the store-time adversarial screen: kept and searchable, "
                                              "but never injected into hook context; forget_concept removes one, "
                                              "check_adversarial re-checks its content"}}

        return await anyio.to_thread.run_sync(run)

    def _distribution(self, importance: np.ndarray, count: int) -> dict[str, Any]:
        if importance.size == 0:
            return {"memories": 0, "message": "The store is empty."}
        hist, edges = np.histogram(importance, bins=self.bins, range=(0.0, 1.0))
        mean = float(importance.mean())
        factor = self.target / mean if mean > 0 else None
        return {
            "memories": int(importance.size), "store_size": count,
            "window": "all memories" if importance.size >= count else f"the {importance.size} most recent",
            "mean": round(mean, 4), "median": round(float(np.median(importance)), 4),
            "sd": round(float(importance.std()), 4), "min": round(float(importance.min()), 4),
            "max": round(float(importance.max()), 4),
            "p90": round(float(np.percentile(importance, 90)), 4),
            "histogram": [{"from": round(float(lo), 2), "to": round(float(hi), 2), "count": int(n)}
                          for lo, hi, n in zip(edges[:-1], edges[1:], hist)],
            "scaling": {"set_point": self.target, "tolerance": self.tolerance,
                        "factor": None if factor is None else round(factor, 4),
                        "needed": factor is not None and abs(mean - self.target) > self.tolerance,
                        "meaning": "multiplicative (synaptic) scaling importance × factor would bring the mean to "
                                   "the set point while keeping every ratio between memories"},
        }
