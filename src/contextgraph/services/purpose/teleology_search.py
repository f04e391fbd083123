"""compute_teleological_vector and search_teleological: a content's (or a memory's) purpose vector, its 78
cross-correlations and 6 group alignments, an optional Tucker/HOSVD of its neighbourhood, and a search of the
store by purpose (its strategies)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np

from contextgraph.errors import BootstrapError, InvalidParams
from contextgraph.fingerprint import SPACES, Fingerprint, Sparse
from contextgraph.retrieval.similarity import context_similarities
from contextgraph.services.purpose.autonomous_scan import preview, read_corpus
from contextgraph.services.purpose.teleology import StarView
from contextgraph.services.purpose.teleology_profiles import TeleologyProfiles
from contextgraph.teleology.clustering import unit
from contextgraph.teleology.purpose import alignment, cross_correlations, group_alignments, pair_names, weight_vector
from contextgraph.teleology.tucker import hosvd, relative_error

NO_STAR = ("No north star yet: a purpose vector is the alignment to it in each space. Call auto_bootstrap_north_star "
           "first (it needs enough stored memories).")


class TeleologySearch:
    def __init__(self, profiles: TeleologyProfiles) -> None:
        self.profiles = profiles
        self.teleology = profiles.teleology
        self.storage = profiles.storage
        self.perception = profiles.perception
        t = self.teleology.settings
        self.tucker_neighbours = int(t["tucker"]["neighbours"])
        self.search_settings = t["search"]

    def _view(self) -> StarView:
        view = self.teleology.star_view()
        if view is None:
            raise BootstrapError(NO_STAR)
        return view

    def _describe(self, pv: np.ndarray, weights: np.ndarray, view: StarView) -> dict[str, Any]:
        cc = cross_correlations(pv)
        return {"purpose_vector": {f"E{s.id}": round(float(v), 5) for s, v in zip(SPACES, pv)},
                "alignment": round(float(alignment(pv, weights, view.reference)), 5),
                "cross_correlations": {n: round(float(v), 5) for n, v in zip(pair_names(), cc)},
                "group_alignments": {g: round(float(v), 5)
                                     for g, v in group_alignments(pv, self.teleology.groups).items()}}

    async def compute(self, content: str, profile_id: str | None, compute_tucker: bool, ranks: Sequence[int],
                      include_per_embedder: bool) -> dict[str, Any]:
        await self.storage.ready()
        view = self._view()
        pipeline = await self.perception.pipeline()
        by_space = self.teleology.use_embedders(pipeline.embedders)
        profile = self.profiles.profile(profile_id)
        (fp,), _ = await self.perception.embed_texts([content], "text", None)
        started = time.perf_counter()
        pv = view.purpose(by_space, [fp])[0]
        weights = view.weights if profile is None else weight_vector(profile["embedder_weights"])
        out: dict[str, Any] = {"star_id": view.id, "profile_id": profile_id, **self._describe(pv, weights, view),
                               "alignment_weights": "the profile's embedder weights" if profile else
                               "the constitution's alignment weights (topical spaces)"}
        if compute_tucker:
            out["tucker"] = await anyio.to_thread.run_sync(
                lambda: self._tucker(fp, ranks, by_space, pipeline.embedders))
        if include_per_embedder:
            out["per_embedder"] = {f"E{s.id}": _raw(fp[s.id]) for s in SPACES}
        out["compute_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return out

    def _tucker(self, fp: Fingerprint, ranks: Sequence[int], by_space: Any, embedders: Any) -> dict[str, Any]:
        """HOSVD of X[m, s, a] = similarity of memory m (the content and its E1 neighbours) to anchor a (the store
        model's reference sample) in space s: memory × space × feature."""
        store, indexes = self.storage.store, self.storage.indexes
        anchors = list(self.storage.delta_sc.reference(store, indexes, embedders))
        seqs = [seq for seq, _ in indexes.search(1, fp[1], self.tucker_neighbours)]
        docs = [fp] + [f for f in store.fingerprints(seqs) if f is not None]
        if not anchors or len(docs) < 2:
            return {"computed": False, "reason": "the store is too small for a memory × space × feature tensor"}
        tensor = np.stack([context_similarities(by_space, a, docs) for a in anchors], axis=2)  # [N, 13, F]
        t = hosvd(tensor, ranks)
        return {"computed": True, "tensor_shape": list(tensor.shape), "ranks": [f.shape[1] for f in t.factors],
                "core_shape": list(t.core.shape), "relative_error": round(relative_error(tensor, t), 6),
                "content_coordinates": [round(float(v), 5) for v in t.factors[0][0]],
                "space_factors": {f"E{s.id}": [round(float(v), 5) for v in row]
                                  for s, row in zip(SPACES, t.factors[1])},
                "singular_values": [[round(float(v), 4) for v in s[:8]] for s in t.singular_values],
                "method": "X[m, s, a]: similarity of memory m (the content and its E1 neighbours) to anchor a (the "
                          "store's reference sample) in space s; truncated HOSVD (SVD of each unfolding)"}

    # -- search ----------------------------------------------------------------------------------------------
    async def search(self, *, query_content: str | None, query_vector_id: str | None, strategy: str, scope: str,
                     specific_groups: list[str] | None, specific_embedder: int | None, weights: dict[str, float],
                     min_similarity: float, max_results: int, include_breakdown: bool) -> dict[str, Any]:
        if (query_content is None) == (query_vector_id is None):
            raise InvalidParams("Give exactly one of query_content (text to embed) or query_vector_id (a stored "
                                "memory's id).", field="query_content")
        await self.storage.ready()
        view = self._view()
        pipeline = await self.perception.pipeline()
        by_space = self.teleology.use_embedders(pipeline.embedders)
        if query_content is not None:
            (fp,), _ = await self.perception.embed_texts([query_content], "text", None)
        else:
            (fp,) = await self.profiles.fingerprints_of([query_vector_id or ""], ("query_vector_id",))
        started = time.perf_counter()
        out = await anyio.to_thread.run_sync(lambda: self._search(
            view, by_space, fp, query_vector_id, strategy, scope, specific_groups, specific_embedder, weights,
            min_similarity, max_results, include_breakdown))
        out["search_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return out

    def _search(self, view: StarView, by_space: Any, fp: Fingerprint, exclude: str | None, strategy: str, scope: str,
                groups_only: list[str] | None, embedder: int | None, w: dict[str, float], min_similarity: float,
                max_results: int, breakdown: bool) -> dict[str, Any]:
        corpus = read_corpus(self.storage.store, int(self.teleology.constitution["autonomous"]["max_scan"]))
        if not len(corpus):
            return {"results": [], "count": 0, "strategy": strategy, "scanned": 0}
        q = view.purpose(by_space, [fp])[0]
        pvs, aligned = self.teleology.alignments_of(corpus.records, view)
        groups = {g: s for g, s in self.teleology.groups.items() if not groups_only or g in groups_only}
        if groups_only:  # only the chosen groups' spaces take part
            mask = np.zeros(13, dtype=bool)
            for spaces in groups.values():
                mask[[s - 1 for s in spaces]] = True
            q, pvs = q * mask, pvs * mask
        if strategy == "adaptive":
            strategy = "synergy_weighted" if self.teleology.state().get("synergy_updates") else "cosine"
        parts: dict[str, np.ndarray] = {}
        if embedder is not None:
            parts["embedder"] = 1.0 - np.abs(pvs[:, embedder] - q[embedder])
            total = parts["embedder"]
        else:
            parts = self._parts(q, pvs, groups, strategy)
            semantic = unit(corpus.vectors) @ unit(np.asarray(fp[1])[None, :])[0]
            parts["semantic"] = np.clip(semantic, 0.0, 1.0)
            total = self._combine(parts, scope, strategy, w)
        order = [i for i in np.argsort(-total, kind="stable") if total[i] >= min_similarity
                 and corpus.records[i].id != exclude][:max_results]
        results = []
        for i in order:
            r = corpus.records[i]
            item: dict[str, Any] = {"id": r.id, "similarity": round(float(total[i]), 5),
                                    "alignment": round(float(aligned[i]), 5), "preview": preview(r.content)}
            if breakdown:
                item["breakdown"] = {k: round(float(v[i]), 5) for k, v in parts.items()}
            results.append(item)
        return {"results": results, "count": len(results), "strategy": strategy, "scope": scope,
                "scanned": len(corpus), "star_id": view.id,
                "query": {"purpose_vector": [round(float(v), 5) for v in q],
                          "alignment": round(float(view.align(q)), 5)}}

    def _parts(self, q: np.ndarray, pvs: np.ndarray, groups: dict[str, Any], strategy: str) -> dict[str, np.ndarray]:
        cq, cs = cross_correlations(q), cross_correlations(pvs)
        gq = np.array(list(group_alignments(q, groups).values()))
        gs = np.stack(list(group_alignments(pvs, groups).values()), axis=1)
        if strategy == "euclidean":
            def sim(a: np.ndarray, m: np.ndarray) -> np.ndarray:
                return 1.0 / (1.0 + np.linalg.norm(m - a, axis=1))
        elif strategy == "synergy_weighted":
            s = self.profiles.matrix()
            root = np.linalg.cholesky(s + 1e-6 * np.eye(13)) if _pd(s) else np.eye(13)
            q, pvs = q @ root, pvs @ root  # q·S·p as an inner product: S = L Lᵀ

            def sim(a: np.ndarray, m: np.ndarray) -> np.ndarray:
                return unit(m) @ unit(a[None, :])[0]
        elif strategy == "tucker_compressed":
            _, _, vt = np.linalg.svd(pvs - pvs.mean(axis=0), full_matrices=False)
            basis = vt[: min(4, len(vt))].T  # the leading purpose directions of the store
            q, pvs = q @ basis, pvs @ basis

            def sim(a: np.ndarray, m: np.ndarray) -> np.ndarray:
                return (1.0 + unit(m) @ unit(a[None, :])[0]) / 2.0
        else:  # cosine, group_hierarchical, cross_correlation_dominant
            def sim(a: np.ndarray, m: np.ndarray) -> np.ndarray:
                return unit(m) @ unit(a[None, :])[0]
        return {"purpose": sim(q, pvs), "correlations": sim(cq, cs) if strategy != "tucker_compressed"
                else unit(cs) @ unit(cq[None, :])[0], "groups": sim(gq, gs) if strategy != "tucker_compressed"
                else unit(gs) @ unit(gq[None, :])[0]}

    def _combine(self, parts: dict[str, np.ndarray], scope: str, strategy: str, w: dict[str, float]) -> np.ndarray:
        if scope != "full":
            key = {"purpose_vector_only": "purpose", "cross_correlations_only": "correlations",
                   "group_alignments_only": "groups"}[scope]
            return parts[key]
        weights = dict(w)
        fixed = self.search_settings["strategy_weights"].get(strategy)
        if fixed:  # strategies that fix the balance themselves
            weights = {k: float(v) for k, v in fixed.items()}
        weights["semantic"] = max(0.0, 1.0 - sum(weights.values()))
        total = sum(weights.values()) or 1.0
        combined = sum(weights[k] * parts[k] for k in ("purpose", "correlations", "groups", "semantic")) / total
        return np.asarray(combined, dtype=np.float64)


def _pd(m: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(m + 1e-6 * np.eye(len(m)))
        return True
    except np.linalg.LinAlgError:
        return False


def _raw(v: Any) -> Any:
    if isinstance(v, Sparse):
        return {"kind": "sparse", "indices": v.indices.tolist(), "values": [round(float(x), 4) for x in v.values]}
    a = np.asarray(v)
    if a.dtype == np.uint8:
        return {"kind": "binary", "bits": a.size * 8, "hex": a.tobytes().hex()}
    if a.ndim == 2:
        return {"kind": "multivector", "tokens": int(a.shape[0]), "dim": int(a.shape[1]),
                "vectors": [[round(float(x), 4) for x in row] for row in a]}
    return {"kind": "dense", "dim": int(a.size), "vector": [round(float(x), 4) for x in a]}
