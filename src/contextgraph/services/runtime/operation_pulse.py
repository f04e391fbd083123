"""Every memory operation moves the pulse (docs/decisions.md#d16), not only the ones that store.

The pulse's entropy and coherence are running averages of the aggregate ΔS and ΔC of recent operations
(CognitiveState.record). An operation contributes the UTL (services.delta_sc, the engine's one calibrated
measure) of what it touched, scored against the store:

    search_graph     the query against its answer (services.delta_sc_neighbours.rank_within: the found memories
                     are its neighbourhood, no index search or read): how novel the query is against what the
                     store answers, and how coherent that answer is around it (connectivity, cluster fit)
    merge_concepts   the merged memory against the store before the merge, sources still in it: merging
                     duplicates scores near-zero novelty, so entropy falls
    forget_concept   the forgotten memory against the rest (scored before it goes)
    restore          the memories brought back, against the rest
    annotate / boost the curated memory against the rest, its new importance in wₑ, its current edges in E8's
                     connectivity (the curated neighbourhood)

A stored memory is always scored leaving itself out (its seq excluded, as get_johari_classification does). An
operation that touched several memories folds the mean of their per-space values, once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import numpy as np

from contextgraph.fingerprint import Fingerprint
from contextgraph.services.engine.delta_sc_result import DeltaSc
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle


def score(storage: StoreHandle, embedders: Sequence[Any], fingerprint: Fingerprint, *,
          exclude: frozenset[int] = frozenset(), importance: float | None = None,
          edge_weights: Sequence[float] = (), own_triples: Sequence[Any] = (),
          pool: Mapping[int, Fingerprint] | None = None,
          pool_similarities: Mapping[int, np.ndarray] | None = None) -> DeltaSc:
    """The UTL of `fingerprint` against the store, or against `pool` ({seq: fingerprint}) when given (in the
    caller's worker thread), whose similarities to it `pool_similarities` may hold ({seq: [13]})."""
    state = storage.cognition.snapshot()
    return storage.delta_sc.compute(storage.store, storage.indexes, embedders, fingerprint,
                                    coherence_history=state["coherence_history"], exclude=exclude,
                                    edge_weights=edge_weights, triples=own_triples, own_triples=own_triples,
                                    importance=importance, pool=pool,
                                    pool_similarities=pool_similarities)


def fold(storage: StoreHandle, results: Sequence[DeltaSc], added: int = 0) -> None:
    """One operation's UTL into the pulse: the mean per-space ΔS/ΔC (and L, L̂) of what it touched. The store's
    size is the one the UTL was measured against (read in the worker that computed it, never here on the event
    loop), plus the `added` memories committed since."""
    if not results:
        return
    delta_s = np.mean([r.delta_s for r in results], axis=0).tolist()
    delta_c = np.mean([r.delta_c for r in results], axis=0).tolist()
    memory_count = max(r.memory_count for r in results) + added
    storage.cognition.record(delta_s, delta_c, memory_count=memory_count,
                             learning_score=float(np.mean([r.learning_score for r in results])),
                             predicted_learning_score=float(np.mean([r.predicted_learning_score for r in results])))


async def score_stored(storage: StoreHandle, perception: Perception, memory_ids: Sequence[str]) -> list[DeltaSc]:
    """The UTL of each live memory among `memory_ids` against the store without it (ids not live are skipped)."""
    store = (await storage.ready()).store
    pipeline = await perception.pipeline()

    def run() -> list[DeltaSc]:
        out = []
        for memory_id in dict.fromkeys(memory_ids):
            record = store.get(memory_id)
            (fp,) = store.fingerprints([record.seq]) if record is not None else (None,)
            if record is None or fp is None:
                continue
            edges = store.graph_read(lambda g, m=memory_id: g.edges(m))
            own = store.triples_of(memory_id)
            out.append(score(storage, pipeline.embedders, fp, exclude=frozenset({record.seq}),
                             importance=record.importance, edge_weights=[e.weight for e in edges], own_triples=own))
        return out

    return await anyio.to_thread.run_sync(run, limiter=perception.reads)


async def fold_stored(storage: StoreHandle, perception: Perception, memory_ids: Sequence[str]) -> None:
    """score_stored, then fold: what curation calls after an operation that leaves its memories live."""
    fold(storage, await score_stored(storage, perception, memory_ids))
