"""test_recall_accuracy and debug_compare_retrieval (docs/retrieval.md): the live five-stage
pipeline (services.search, built exactly as search_graph builds it) beside each space's own ranking.

A space "alone" is its own index's nearest memories over the whole store (E6/E13 BM25 with the pipeline's k1/b;
E5 re-scored asymmetrically in the direction the query asks, from a wider E5 candidate list); E12 has no index,
so it ranks the pipeline's candidate pool by MaxSim. Diagnostics read only: no access counts, no workspace
competition, no pulse movement.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import numpy as np

from contextgraph.embedders.e05_causal import query_direction
from contextgraph.fingerprint import SPACE_BY_ID, SPACES, Fingerprint
from contextgraph.retrieval.diagnostics import rank_changes, recall_scores
from contextgraph.services.memory.memory import MemoryService
from contextgraph.services.memory.search import Retrieval, Retriever
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle

LATE = 12
CAUSAL = 5


def space_label(space: int) -> str:
    return f"E{space}"


class RetrievalDiagnostics:
    def __init__(self, storage: StoreHandle, perception: Perception, memory: MemoryService) -> None:
        self.storage = storage
        self.perception = perception
        self.memory = memory

    async def _run(self, query: str, top_k: int, spaces: list[int]) -> dict[str, Any]:
        """Embed the query once; run the pipeline; rank by each space alone. Returns the pieces."""
        storage = await self.storage.ready()
        pipeline = await self.perception.pipeline()
        memory = self.memory
        started = time.perf_counter()
        fingerprint = await self.perception.embed_query(query)
        embed_ms = round((time.perf_counter() - started) * 1000, 3)  # with the wait for its batch

        def run() -> dict[str, Any]:
            retriever: Retriever = memory.retriever(pipeline)  # the one search_graph uses (stage 4 included)
            direction = query_direction(query)
            retrieval = retriever.run(fingerprint, top_k, causal_direction=direction, query_text=query)
            alone = {}
            for space in spaces:
                lap = time.perf_counter()
                alone[space] = (self._alone(retriever, retrieval, fingerprint, space, top_k, direction),
                                round((time.perf_counter() - lap) * 1000, 3))
            ids = {seq: r.id for seq, r in self._records(storage, alone).items()}
            return {"fingerprint": fingerprint, "retrieval": retrieval, "embed_ms": embed_ms, "ids": ids,
                    "alone": alone, "direction": direction}

        return await anyio.to_thread.run_sync(run, limiter=self.perception.reads)

    @staticmethod
    def _records(storage: StoreHandle, alone: dict[int, Any]) -> dict[int, Any]:
        seqs = sorted({seq for ranked, _ in alone.values() for seq, _ in ranked})
        return {seq: r for seq, r in zip(seqs, storage.store.get_by_seq(seqs)) if r is not None}

    def _alone(self, retriever: Retriever, retrieval: Retrieval, query: Fingerprint, space: int, top_k: int,
               direction: str) -> list[tuple[int, float]]:
        """(seq, score) of the top_k memories by this space alone."""
        indexes, store = self.storage.indexes, self.storage.store
        embedder = retriever.embedders[space]
        if space == LATE:  # no index: MaxSim over the pipeline's candidate pool
            seqs = self._pool(retriever, query)
            fps = store.fingerprints(seqs, spaces=[LATE])
            pairs = [(seq, fp[LATE]) for seq, fp in zip(seqs, fps) if fp is not None]
            if not pairs:
                return []
            scores = np.asarray(embedder.similarity(query[LATE], [v for _, v in pairs]), dtype=np.float64)
            order = np.argsort(-scores, kind="stable")[:top_k]
            return [(pairs[i][0], float(scores[i])) for i in order]
        if space == CAUSAL:  # asymmetric: re-score a wider list in the direction the query asks
            wide = indexes.search(CAUSAL, query[CAUSAL], max(50, 5 * top_k))
            fps = store.fingerprints([seq for seq, _ in wide], spaces=[CAUSAL])
            pairs = [(seq, fp[CAUSAL]) for (seq, _), fp in zip(wide, fps) if fp is not None]
            if not pairs:
                return []
            scores = np.asarray(embedder.similarity(query[CAUSAL], [v for _, v in pairs], direction=direction))
            order = np.argsort(-scores, kind="stable")[:top_k]
            return [(pairs[i][0], float(scores[i])) for i in order]
        bm25 = self.memory.retrieval_settings.bm25.get(space, {})
        return [(seq, float(score)) for seq, score in indexes.search(space, query[space], top_k, **bm25)]

    def _pool(self, retriever: Retriever, query: Fingerprint) -> list[int]:
        """The pipeline's candidate pool (S1 + S2), as Retriever.run gathers it."""
        s = retriever.settings
        indexes = self.storage.indexes
        seqs: dict[int, None] = {}
        for space in (13, 6):
            seqs.update((seq, None) for seq, _ in indexes.search(space, query[space], s.sparse_candidates,
                                                                 s.sparse_max_df, **s.bm25.get(space, {})))
        seqs.update((seq, None) for seq, _ in indexes.search(1, query[1], s.dense_candidates))
        return list(seqs)

    async def recall_accuracy(self, query: str, expected: list[str], top_k: int) -> dict[str, Any]:
        spaces = [s.id for s in SPACES]
        out = await self._run(query, top_k, spaces)
        retrieval: Retrieval = out["retrieval"]
        pipeline_ids = [f.record.id for f in retrieval.found]
        scores = recall_scores(pipeline_ids, expected)
        live = await self.storage.read(lambda store: {i for i in expected if store.get(i) is not None})
        per_space = {}
        for space, (ranked, ms) in out["alone"].items():
            ids = [out["ids"][seq] for seq, _ in ranked if seq in out["ids"]]
            sc = recall_scores(ids, expected)
            per_space[space_label(space)] = {"name": SPACE_BY_ID[space].name, "precision": round(sc.precision, 4),
                                             "recall": round(sc.recall, 4), "f1": round(sc.f1, 4),
                                             "hits": len(sc.hits), "ms": ms}
        best = max(per_space.items(), key=lambda kv: (kv[1]["f1"], kv[1]["recall"]))
        result: dict[str, Any] = {
            "query": query, "top_k": top_k,
            "precision": round(scores.precision, 4), "recall": round(scores.recall, 4), "f1": round(scores.f1, 4),
            "missing_expected": scores.missing_expected, "unexpected_results": scores.unexpected_results,
            "results": [{"rank": r, "id": f.record.id, "expected": f.record.id in set(expected),
                         "score": f.score} for r, f in enumerate(retrieval.found, start=1)],
            "per_space": per_space, "best_single_space": best[0],
            "measures": "precision = expected among the results / results; recall = expected found / expected; "
                        "F1 their harmonic mean. Per space: that space's own top_k over the whole store (E12: the "
                        "pipeline's candidate pool by MaxSim)",
        }
        gone = [i for i in expected if i not in live]
        if gone:
            result["not_in_store"] = gone
            result["message"] = (f"{len(gone)} expected id(s) are not live memories (deleted or never stored); "
                                 "they count as missing.")
        return result

    async def compare(self, query: str, spaces: list[str], top_k: int) -> dict[str, Any]:
        ids = [int(s[1:]) for s in spaces]
        out = await self._run(query, top_k, ids)
        retrieval: Retrieval = out["retrieval"]
        final = [f.record.id for f in retrieval.found]
        final_rank = {i: r for r, i in enumerate(final, start=1)}
        pipeline = [{"rank": r, "id": f.record.id, "score": f.score, "similarity": f.similarity,
                     "content": _short(f.record.content),
                     "space_ranks": {space_label(s): f.space_ranks.get(s) for s in ids}}
                    for r, f in enumerate(retrieval.found, start=1)]
        by_space = {}
        for space, (ranked, ms) in out["alone"].items():
            ranked_ids = [out["ids"][seq] for seq, _ in ranked if seq in out["ids"]]
            changes = rank_changes(ranked_ids, final)  # how the pipeline moved each of its results
            by_space[space_label(space)] = {
                "name": SPACE_BY_ID[space].name, "ms": ms,
                "ranking": [{"rank": r, "id": i, "score": round(score, 6), "pipeline_rank": final_rank.get(i)}
                            for r, (i, score) in enumerate(zip(ranked_ids, [s for _, s in ranked]), start=1)],
                "rank_changes": changes,
                "overlap_with_pipeline": len(set(ranked_ids) & set(final)),
            }
        return {"query": query, "top_k": top_k, "causal_direction": out["direction"],
                "stages_ms": {"embed_query": out["embed_ms"], **retrieval.stages_ms},
                "candidates": retrieval.candidates,
                "stage4": retrieval.stage4, "pipeline": pipeline, "spaces": by_space,
                "reading": "spaces.<E>.ranking: the space alone over the whole store; pipeline[].space_ranks: each "
                           "result's rank in that space among the pipeline's candidates; rank_changes: rank alone − "
                           "rank in the pipeline (positive: fusion moved it up; null: the space alone did not rank "
                           "it in its top_k)"}


def _short(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
