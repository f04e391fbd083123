"""omni_infer and query_causal (docs/engine.md#causal-inference): causal inference over stored Causal edges and the E5
asymmetric space. The neighbourhood comes from services.causal_graph, the chains from graph.causal.

    forward        does `source` lead to `target`?            best chain source → … → target
    backward       is `target` a cause of `source`?           best chain target → … → source
    bidirectional  both of the above (mutual when both hold)
    abduction      the best explanations of `source`, ranked  (its causes, by chain confidence)
    bridge         causal links from `source` into other topics (causes or effects whose E1 cosine to it is low)

A chain's confidence is the product of its links' strengths: a stored edge its effective weight, an inferred
link its E5 half similarity × e5_discount. Cycles are reported (`cycle`), never followed.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.embedders.e05_causal import CausalEmbedder, query_direction
from contextgraph.errors import InvalidParams
from contextgraph.graph.causal import best_chains, chain_links
from contextgraph.graph.kernels import first_cycle
from contextgraph.services.memory.causal_graph import CausalExplorer, CausalSettings, Neighbourhood
from contextgraph.services.memory.memory import MemoryService
from contextgraph.services.memory.memory_payloads import record_summary
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import MemoryRecord

NEEDS_TARGET = ("forward", "backward", "bidirectional")
_PREVIEW = 200


def _explained(s: CausalSettings) -> str:
    return ("product over the chain's links of each link's strength: a stored Causal edge counts its effective "
            f"weight; a link inferred from E5 (no edge stored) counts its cause·effect half cosine × {s.discount} "
            f"(inferred links need cosine ≥ {s.min_cosine} and a margin ≥ {s.min_margin} over the reverse "
            "direction)")


class CausalInference:
    def __init__(self, storage: StoreHandle, perception: Perception, memory: MemoryService,
                 constitution: Constitution) -> None:
        self.storage = storage
        self.perception = perception
        self.memory = memory
        self.settings = CausalSettings.from_constitution(constitution.data)
        c = constitution["causal_inference"]
        self.top = int(c["hypotheses"])
        self.bridge_max_cos = float(c["bridge_max_topic_cosine"])
        self.anchors = int(c["query_anchors"])

    async def _explorer(self) -> CausalExplorer:
        storage = await self.storage.ready()
        pipeline = await self.perception.pipeline()
        e5 = next(e for e in pipeline.embedders if isinstance(e, CausalEmbedder))
        return CausalExplorer(storage.store, storage.indexes, e5, self.settings)

    async def infer(self, source: str, target: str | None, direction: str) -> dict[str, Any]:
        if direction in NEEDS_TARGET and target is None:
            raise InvalidParams(f"omni_infer direction '{direction}' needs 'target' (the memory to test the link "
                                "to); abduction and bridge work from 'source' alone.", field="target",
                                allowed=list(NEEDS_TARGET))
        if target is not None and target == source:
            raise InvalidParams("'target' must differ from 'source'.", field="target")
        explorer = await self._explorer()
        src = await self.storage.live_record(source)
        tgt = await self.storage.live_record(target) if target is not None else None
        forward = direction in ("forward", "bidirectional", "bridge")
        backward = direction in ("backward", "bidirectional", "abduction", "bridge")
        hood = await anyio.to_thread.run_sync(lambda: explorer.explore(src, forward, backward),
                                              limiter=self.perception.reads)
        out: dict[str, Any] = {"source": source, "target": target, "direction": direction}
        if source in hood.denials:
            out.update(found=False, path=[], confidence=0.0, message="The source memory denies or hedges every "
                       "cause it names; negated statements are never causal evidence.")
            return out | self._common(hood, forward, backward, source)
        ahead = best_chains(hood.links.values(), source, self.settings.max_hops) if forward else {}
        behind = best_chains(hood.links.values(), source, self.settings.max_hops, backward=True) if backward else {}
        if direction in NEEDS_TARGET:
            assert target is not None
            fwd, bwd = ahead.get(target), behind.get(target)
            if direction == "bidirectional":
                out["forward"] = self._chain(hood, fwd, f"{source} does not lead to {target}")
                out["backward"] = self._chain(hood, bwd, f"{target} is not a cause of {source}")
                out["mutual"] = fwd is not None and bwd is not None
                best = max((c for c in (fwd, bwd) if c is not None), key=lambda c: c[0], default=None)
            else:
                best = fwd if direction == "forward" else bwd
            out |= self._chain(hood, best, "No causal chain within "
                                          f"{self.settings.max_hops} hops links the two memories.")
        else:
            out |= self._hypotheses(hood, ahead, behind, direction, source, tgt)
        return out | self._common(hood, forward, backward, source)

    def _chain(self, hood: Neighbourhood, chain: tuple[float, list[str]] | None, missing: str) -> dict[str, Any]:
        if chain is None:
            return {"found": False, "path": [], "confidence": 0.0, "hops": [], "message": missing}
        score, path = chain
        hops = [{"cause": link.cause, "effect": link.effect, "via": link.via, "strength": round(link.strength, 6),
                 **({"e5_similarity": link.similarity, "e5_margin": link.margin} if link.via == "e5" else {})}
                for link in chain_links(path, hood.links)]
        inferred = sum(h["via"] == "e5" for h in hops)
        return {"found": True, "path": path, "confidence": round(score, 6), "hops": hops,
                "chain": " → ".join(_short(hood.records[i].content) for i in path),
                "inferred_links": inferred,
                **({"note": f"{inferred} of {len(hops)} link(s) inferred from E5 similarity: no Causal edge is "
                            "stored for them"} if inferred else {})}

    def _hypotheses(self, hood: Neighbourhood, ahead: dict[str, tuple[float, list[str]]],
                    behind: dict[str, tuple[float, list[str]]], direction: str, source: str,
                    target: MemoryRecord | None) -> dict[str, Any]:
        if direction == "abduction":
            ranked = sorted(behind.items(), key=lambda kv: (-kv[1][0], len(kv[1][1])))
            scored = [(node, score, (score, path), None) for node, (score, path) in ranked]
            method = "causes of the source, by chain confidence (the most credible explanation first)"
        else:
            cosine = self._e1_cosines(source, list({*ahead, *behind}))
            both = {**{n: (c, p, "effect") for n, (c, p) in ahead.items()},
                    **{n: (c, p, "cause") for n, (c, p) in behind.items() if n not in ahead or c > ahead[n][0]}}
            scored = [(node, score * (1.0 - cosine[node]), (score, path),
                       {"role": role, "e1_cosine": round(cosine[node], 4)})
                      for node, (score, path, role) in both.items() if cosine[node] < self.bridge_max_cos]
            scored.sort(key=lambda x: -x[1])
            method = (f"causes and effects of the source in another topic (E1 cosine < {self.bridge_max_cos}), by "
                      "chain confidence × (1 − E1 cosine)")
        hypotheses = []
        for rank, (node, score, held, extra) in enumerate(scored, start=1):
            chain = self._chain(hood, held, "")
            hypotheses.append({"rank": rank, **record_summary(hood.records[node], preview=_PREVIEW),
                               "score": round(score, 6), "confidence": chain["confidence"], "path": chain["path"],
                               "hops": chain["hops"], **(extra or {})})
        out: dict[str, Any] = {"hypotheses": hypotheses[: self.top], "considered": len(scored), "ranking": method}
        best = hypotheses[0] if hypotheses else None
        if target is not None:
            hit = next((h for h in hypotheses if h["id"] == target.id), None)
            out["target_rank"] = hit["rank"] if hit else None
            best = hit
        out.update(found=best is not None, path=best["path"] if best else [],
                   confidence=best["confidence"] if best else 0.0)
        if best is None:
            out["message"] = ("No cause of the source was found within "
                              f"{self.settings.max_hops} hops." if direction == "abduction" else
                              "No causal link from the source reaches another topic.")
        return out

    def _e1_cosines(self, source: str, others: list[str]) -> dict[str, float]:
        store = self.storage.store
        records = [store.get(i) for i in [source, *others]]
        seqs = [r.seq for r in records if r is not None]
        vectors = {r.id: np.asarray(fp[1], dtype=np.float64) for r, fp in
                   zip([r for r in records if r is not None], store.fingerprints(seqs, spaces=[1])) if fp is not None}
        base = vectors.get(source)
        return {i: float(vectors[i] @ base) if base is not None and i in vectors else 0.0 for i in others}

    def _common(self, hood: Neighbourhood, forward: bool, backward: bool, source: str) -> dict[str, Any]:
        cycles = [c for c in ((first_cycle(hood.adjacency(), source, self.settings.max_hops) if forward else []),
                              (first_cycle(hood.adjacency(True), source, self.settings.max_hops) if backward else []))
                  if c]
        out: dict[str, Any] = {
            "confidence_explained": _explained(self.settings),
            "cycle_detected": bool(cycles),
            "explored": {"memories": len(hood.records), "links": len(hood.links),
                         "stored_edges": sum(link.via == "edge" for link in hood.links.values()),
                         "inferred_links": sum(link.via == "e5" for link in hood.links.values()),
                         "max_hops": self.settings.max_hops, "truncated": hood.truncated},
            "excluded_denials": sorted(hood.denials),
        }
        if cycles:
            out["cycle"] = cycles[0]  # the walk up to where it came back on itself; not followed
        return out

    async def query(self, question: str, top_k: int) -> dict[str, Any]:
        """A natural-language "why …?" / "what happens if …?" question: anchor it on the memories search finds,
        then infer in the direction the question asks (both when it does not say)."""
        direction = query_direction(question)
        searched = await self.memory.search(question, top_k=self.anchors, min_similarity=0.0, modality=None,
                                            breakdown=False)
        anchors = [f.record for f in searched.retrieval.found]
        out: dict[str, Any] = {"question": question, "direction": direction,
                               "direction_meaning": {"backward": "looking for causes (a 'why' question)",
                                                     "forward": "looking for effects ('what happens if')",
                                                     "both": "no direction asked: causes and effects"}[direction],
                               "anchors": [record_summary(r, preview=_PREVIEW) for r in anchors]}
        if not anchors:
            return out | {"answers": [], "count": 0, "message": "Nothing stored matches the question; store_memory "
                                                                "the facts first."}
        explorer = await self._explorer()
        forward, backward = direction in ("forward", "both"), direction in ("backward", "both")
        best: dict[str, dict[str, Any]] = {}
        for anchor in anchors:
            hood = await anyio.to_thread.run_sync(lambda a=anchor: explorer.explore(a, forward, backward),
                                                  limiter=self.perception.reads)
            if anchor.id in hood.denials:
                continue
            for role, chains in (("effect", best_chains(hood.links.values(), anchor.id, self.settings.max_hops)
                                  if forward else {}),
                                 ("cause", best_chains(hood.links.values(), anchor.id, self.settings.max_hops, True)
                                  if backward else {})):
                for node, (score, path) in chains.items():
                    if node in best and best[node]["confidence"] >= score:
                        continue
                    chain = self._chain(hood, (score, path), "")
                    best[node] = {**record_summary(hood.records[node], preview=_PREVIEW), "role": role,
                                  "anchor": anchor.id, "confidence": chain["confidence"], "path": chain["path"],
                                  "chain": chain["chain"], "hops": chain["hops"]}
        answers = sorted(best.values(), key=lambda a: -a["confidence"])[:top_k]
        out |= {"answers": answers, "count": len(answers), "confidence_explained": _explained(self.settings)}
        if not answers:
            out["message"] = (f"The anchors have no {'cause' if direction == 'backward' else 'causal link'} within "
                              f"{self.settings.max_hops} hops; find_causal_path and search_graph help look wider.")
        return out


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
