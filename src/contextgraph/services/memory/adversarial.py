"""check_adversarial and the store-time screen (docs/tools.md#security).

    prompt_injection   the injection patterns and their hidden variants (security.injection)
    embedding_outlier  the content's E1 distance to its nearest stored memory as a z-score against the same
                       distance of a sample of stored memories to theirs; beyond outlier_sigma (3) it is an
                       outlier. Fewer than outlier_min_memories (50): "insufficient data", never a flag
    content_misalign   alignment to the north star (services.teleology) below misalign_min_cosine, when a star
                       exists; says so when there is none or the teleology service is not there
    circular_logic     a causal cycle the content would close: a stored memory it leads to (E5) already leads,
                       through stored chains, to a memory that leads to it

`screen` is the cheap part (the patterns only, no embedding): store_memory and inject_context run it on every
memory and flag (never drop) what it finds; flagged memories are kept out of the hook context (shell/hooks.py)
and listed by homeostatic_status.
"""

from __future__ import annotations

import random
from typing import Any

import anyio
import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.embedders.e05_causal import CausalEmbedder
from contextgraph.fingerprint import Fingerprint
from contextgraph.graph.causal import best_chains, e5_link_strength
from contextgraph.retrieval.diagnostics import z_score
from contextgraph.security.injection import scan
from contextgraph.services.memory.causal_graph import CausalExplorer, CausalSettings, stance
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import MemoryStore, SearchIndexes

QUARANTINE_DOC = "quarantine"
# data directory → (memory count when sampled, the sampled nearest-neighbour distances): see _distances
_DISTANCES: dict[str, tuple[int, np.ndarray]] = {}
CHECKS = ("embedding_outlier", "content_misalign", "prompt_injection", "circular_logic")


def screen(content: str, flag_score: float) -> dict[str, Any] | None:
    """The store-time check: the record's `adversarial` extra when the content has a finding, else None."""
    findings = [f for f in scan(content) if f.score >= flag_score]
    if not findings:
        return None
    return {"flagged": True, "findings": [{"check": f.check, "kind": f.kind, "evidence": f.evidence,
                                           "score": f.score} for f in findings]}


def add_to_quarantine(store: MemoryStore, memory_id: str, at: float, kinds: list[str]) -> None:
    """Append one flagged memory to the quarantine list document (on the writer thread: read-modify-write)."""
    doc = store.get_document(QUARANTINE_DOC) or {"memories": []}
    doc["memories"] = [m for m in doc["memories"] if m["id"] != memory_id] + [{"id": memory_id, "at": at,
                                                                              "kinds": kinds}]
    store.put_document(QUARANTINE_DOC, doc)


class AdversarialChecks:
    def __init__(self, storage: StoreHandle, perception: Perception, constitution: Constitution,
                 teleology: Any = None) -> None:
        self.storage = storage
        self.perception = perception
        self.teleology = teleology  # services.teleology.TeleologyService when the bundle has one
        a = constitution["adversarial"]
        self.flag_score = float(a["flag_score"])
        self.sigma = float(a["outlier_sigma"])
        self.min_memories = int(a["outlier_min_memories"])
        self.sample = int(a["outlier_sample"])
        self.refit_growth = float(a["outlier_refit"]["growth"])
        self.refit_min = int(a["outlier_refit"]["min_change"])
        self.misalign = float(a["misalign_min_cosine"])
        self.circular_k = int(a["circular_k"])
        self.causal = CausalSettings.from_constitution(constitution.data)

    async def check(self, content: str, checks: list[str]) -> dict[str, Any]:
        findings: list[dict[str, Any]] = []
        report: dict[str, Any] = {}
        if "prompt_injection" in checks:
            found = scan(content)
            findings += [{"check": f.check, "kind": f.kind, "evidence": f.evidence, "score": f.score}
                         for f in found]
            report["prompt_injection"] = {"status": "checked", "findings": len(found)}
        needs_embedding = [c for c in checks if c != "prompt_injection"]
        if needs_embedding:
            storage = await self.storage.ready()
            (fingerprint,), _ = await self.perception.embed_texts([content], "text", None)
            pipeline = await self.perception.pipeline()
            e5 = next(e for e in pipeline.embedders if isinstance(e, CausalEmbedder))

            def run() -> None:
                store, indexes = storage.store, storage.indexes
                if "embedding_outlier" in checks:
                    report["embedding_outlier"] = self._outlier(store, indexes, fingerprint, findings)
                if "content_misalign" in checks:
                    report["content_misalign"] = self._misalign(pipeline.embedders, fingerprint, findings)
                if "circular_logic" in checks:
                    report["circular_logic"] = self._circular(store, indexes, e5, content, fingerprint, findings)

            await anyio.to_thread.run_sync(run, limiter=self.perception.reads)
        flagged = any(f["score"] >= self.flag_score for f in findings)
        return {"flagged": flagged, "findings": findings, "checks": report, "flag_score": self.flag_score,
                "message": ("Flagged: a memory with this content would be stored but quarantined from hook context "
                            "(homeostatic_status lists it)." if flagged else "No check found anything.")}

    def _outlier(self, store: MemoryStore, indexes: SearchIndexes, fingerprint: Fingerprint,
                 findings: list[dict[str, Any]]) -> dict[str, Any]:
        count = store.count()
        if count < self.min_memories:
            return {"status": "insufficient data", "memories": count, "needs": self.min_memories,
                    "message": f"The store holds {count} memories; an outlier test needs {self.min_memories} for "
                               "a meaningful mean and spread."}
        query = np.asarray(fingerprint[1], dtype=np.float32)
        hits = indexes.search(1, query, 1)
        distance = 1.0 - float(hits[0][1]) if hits else 1.0
        sample = self._distances(store, indexes, count)
        z = z_score(distance, sample)
        out = {"status": "checked", "nearest_distance": round(distance, 4), "z": round(z, 3), "sigma": self.sigma,
               "store_mean": round(float(np.mean(sample)), 4), "store_sd": round(float(np.std(sample, ddof=1)), 4),
               "sampled": len(sample)}
        if z > self.sigma:
            findings.append({"check": "embedding_outlier", "kind": "isolated",
                             "evidence": f"E1 distance to the nearest stored memory {distance:.3f} is {z:.1f} "
                                         f"standard deviations above the store's ({out['store_mean']} ± "
                                         f"{out['store_sd']}, {len(sample)} sampled)",
                             "score": round(min(1.0, z / (2 * self.sigma)), 4)})
        return out

    def _distances(self, store: MemoryStore, indexes: SearchIndexes, count: int) -> np.ndarray:
        """Each sampled stored memory's E1 distance to its nearest other memory: what a new text's distance is a
        z-score against. Up to `outlier_sample` memories drawn uniformly over sequence numbers (deterministic per
        store state); kept per data directory until the store has grown or shrunk by `outlier_refit` (one HNSW
        query per sampled memory is most of the check's cost)."""
        key = str(self.storage.home)
        held = _DISTANCES.get(key)
        if held is not None and abs(count - held[0]) <= max(self.refit_min, held[0] * self.refit_growth):
            return held[1]
        last = store.last_seq()
        rng = random.Random(last)
        seqs = list(range(1, last + 1)) if last <= self.sample else rng.sample(range(1, last + 1), self.sample)
        sample: list[float] = []
        for seq, fp in zip(seqs, store.fingerprints(seqs, spaces=[1])):
            if fp is None:
                continue  # deleted
            nearest = [s for other, s in indexes.search(1, np.asarray(fp[1], dtype=np.float32), 2) if other != seq]
            if nearest:
                sample.append(1.0 - float(nearest[0]))
        distances = np.asarray(sample, dtype=np.float64)
        _DISTANCES[key] = (count, distances)
        return distances

    def _misalign(self, embedders: Any, fingerprint: Fingerprint, findings: list[dict[str, Any]]) -> dict[str, Any]:
        teleology = self.teleology
        if teleology is None or not hasattr(teleology, "purpose_of"):
            return {"status": "not available yet", "message": "The north star (teleology) is not part of this "
                                                              "server yet."}
        if hasattr(teleology, "use_embedders"):
            teleology.use_embedders(embedders)
        found = teleology.purpose_of(fingerprint)
        if found is None:
            return {"status": "no north star", "message": "No north star yet: auto_bootstrap_north_star derives "
                                                          "one from the stored memories."}
        star_id, _pv, a = found
        out = {"status": "checked", "alignment": round(float(a), 4), "threshold": self.misalign, "star_id": star_id}
        if a < self.misalign:
            findings.append({"check": "content_misalign", "kind": "far_from_north_star",
                             "evidence": f"alignment to the north star {a:.3f} < {self.misalign}",
                             "score": round(min(1.0, (self.misalign - a) / max(self.misalign, 1e-9) + 0.5), 4)})
        return out

    def _circular(self, store: MemoryStore, indexes: SearchIndexes, e5: CausalEmbedder, content: str,
                  fingerprint: Fingerprint, findings: list[dict[str, Any]]) -> dict[str, Any]:
        kind = stance(content)
        if kind != "causal":
            return {"status": "checked", "message": "The content states no cause and effect"
                                                    + (" (its causal cues are negated)." if kind == "denial" else ".")}
        cause, effect = e5.halves(np.asarray(fingerprint[5]))
        seqs: dict[int, None] = {}
        # candidates as the auto-edge rule finds them: E5 nearest to [effect;effect] and [cause;cause], E1 nearest
        for space, query in ((5, np.concatenate([effect, effect]) / np.sqrt(2.0)),
                             (5, np.concatenate([cause, cause]) / np.sqrt(2.0)), (1, np.asarray(fingerprint[1]))):
            seqs.update((seq, None) for seq, _ in indexes.search(space, query.astype(np.float32), self.circular_k))
        order = list(seqs)
        leads_to, comes_from = {}, {}  # memory id → strength of content → it / it → content
        records = {}
        for record, fp in zip(store.get_by_seq(order), store.fingerprints(order, spaces=[5])):
            if record is None or fp is None or stance(record.content) != "causal":
                continue
            records[record.id] = record
            o_cause, o_effect = e5.halves(np.asarray(fp[5]))
            out, into = float(effect @ o_cause), float(o_effect @ cause)
            s = self.causal
            forward = e5_link_strength(out, into, min_cosine=s.min_cosine, min_margin=s.min_margin, discount=s.discount)
            backward = e5_link_strength(into, out, min_cosine=s.min_cosine, min_margin=s.min_margin,
                                        discount=s.discount)
            if forward is not None:
                leads_to[record.id] = forward
            if backward is not None:
                comes_from[record.id] = backward
        explorer = CausalExplorer(store, indexes, e5, self.causal)
        best: tuple[float, list[str]] | None = None
        for first, s_first in leads_to.items():
            hood = explorer.explore(records[first], forward=True, backward=False)
            chains = best_chains(hood.links.values(), first, self.causal.max_hops)
            chains[first] = (1.0, [first])
            for last, s_last in comes_from.items():
                if last in chains:
                    score = s_first * chains[last][0] * s_last
                    if best is None or score > best[0]:
                        best = (score, chains[last][1])
        out_report: dict[str, Any] = {"status": "checked", "leads_to": len(leads_to), "comes_from": len(comes_from)}
        if best is not None:
            score, path = best
            cycle = ["(content)", *path, "(content)"]
            out_report["cycle"] = cycle
            findings.append({"check": "circular_logic", "kind": "closes_cycle",
                             "evidence": "the content leads to " + " → ".join(
                                 _short(records[i].content) if i in records else i for i in path)
                                         + ", which leads back to the content's cause",
                             "score": round(max(self.flag_score, min(1.0, 0.5 + score)), 4), "path": path})
        return out_report


def _short(text: str, n: int = 50) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
