"""The UTL's two neighbourhoods (services.delta_sc_neighbours) agree where they must: ranking a pool that holds
the whole store by each space's own similarity gives the dense spaces' index neighbours (HNSW is exact on a
store this small), E12 borrows E1's order in both, and `exclude` leaves the scored memory out of both. A search's
UTL against its answer (D16) is a full UTL: ΔS/ΔC in [0, 1] in every space."""

from __future__ import annotations

import time

import numpy as np
import pytest

from contextgraph import log
from contextgraph.app import build_services
from contextgraph.constitution import constitution
from contextgraph.embedders.pipeline import Draft
from contextgraph.fingerprint import SPACES
from contextgraph.retrieval.similarity import context_similarities, space_similarities
from contextgraph.services.engine.delta_sc_neighbours import index_neighbours, rank_within
from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.services.runtime import operation_pulse

pytestmark = pytest.mark.anyio
TEXTS = [
    "The deploy failed because the database migration timed out after 30 seconds.",
    "Run pytest -x to stop at the first failing test.",
    "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
    "The team prefers squash merges so that main keeps one commit per feature.",
    "Our staging cluster runs PostgreSQL 16 with two read replicas.",
    "The cache is warmed at start-up from the previous run's snapshot.",
    "Sourdough bread needs a ripe starter and a long cold proof.",
    "A stale lock file stops the second server from opening the store.",
]
# E5's index is the cosine of the whole [cause ; effect] vector, its similarity the better of the like halves:
# two measures, so its two neighbourhoods may differ; E2-E4 encode when, and these memories are stored seconds
# apart: near-ties that either ranking may break its own way
DENSE = (1, 7, 8, 10, 11)


async def test_a_pool_of_the_whole_store_ranks_like_the_indexes(settings):
    services = build_services(settings, constitution(), log.LogRing(100))
    services.storage.open()
    try:
        for text in TEXTS:
            await services.memory.store(NewMemory(text, "a memory for the neighbourhood test"))
        handle = services.storage
        pipeline = await services.perception.pipeline()
        by_space = {e.space: e for e in pipeline.embedders}
        store, indexes = handle.store, handle.indexes
        everything = {r.seq: fp for r, fp in store.scan()}
        (probe,) = pipeline.embed([Draft("Why did the database migration time out during the deploy?",
                                         timestamp=time.time())])
        for exclude in (frozenset(), frozenset({min(everything)})):
            ranked, fps = index_neighbours(store, indexes, probe, exclude, 4, 1.0)
            pooled, kept, scores = rank_within(by_space, probe, everything, 4, exclude)
            assert not exclude & set(kept) and not any(exclude & set(r) for r in pooled.values())
            for space in SPACES:  # the similarities handed on to the UTL are those of the ranked lists
                if space.id != 12:
                    expected = space_similarities(by_space, space, probe, [kept[s] for s in pooled[space.id]])
                    assert np.allclose(scores[space.id], expected, atol=1e-6), space.id  # float32 BLAS order
            for space in DENSE:
                assert set(pooled[space]) == set(ranked[space]), space
            # given the pool's similarities (what search_graph's stage 5 measured), the same ranking and scores.
            # Measured over the same memories: float32 products over another set of rows may round differently,
            # and E2-E4's near-ties (memories seconds apart) would then break another way
            measured = dict(zip(kept, context_similarities(by_space, probe, list(kept.values()))))
            again, kept_again, scores_again = rank_within(by_space, probe, everything, 4, exclude, measured)
            assert again == pooled and list(kept_again) == list(kept)
            assert all(np.array_equal(scores_again[space], scores[space]) for space in scores)
            partial = dict(list(measured.items())[1:])  # one pooled memory not measured: all are measured here
            assert rank_within(by_space, probe, everything, 4, exclude, partial)[0] == pooled
            assert pooled[12] == pooled[1] and ranked[12] == ranked[1]
            assert set(fps) <= set(kept)
        answer = {s: everything[s] for s in list(everything)[:3]}
        utl = handle.delta_sc.compute(store, indexes, pipeline.embedders, probe, coherence_history=[0.5] * 4,
                                      pool=answer)
        assert len(utl.delta_s) == 13 and all(0.0 <= v <= 1.0 for v in utl.delta_s + utl.delta_c)
        assert not np.isnan(utl.learning_score)
    finally:
        services.close()


async def test_a_search_pulse_from_its_measured_similarities_equals_one_that_measures_them(settings):
    """search_graph hands its answer's per-space similarities (Found.similarities) to the pulse's UTL instead of
    having rank_within measure them again: the UTL must come out the same, value for value."""
    services = build_services(settings, constitution(), log.LogRing(100))
    services.storage.open()
    try:
        for text in TEXTS:
            await services.memory.store(NewMemory(text, "a memory for the neighbourhood test"))
        # each store's UTL runs after its answer and folds into the coherence history that consistency reads: one
        # landing between the two scores below made them differ (0.0005 in E1's ΔC)
        await services.memory.settled()
        pipeline = await services.perception.pipeline()
        by_space = {e.space: e for e in pipeline.embedders}
        text = "why did the migration time out"
        (query,) = pipeline.embed([Draft(text, timestamp=time.time())])
        found = services.memory.retriever(pipeline).run(query, 5, query_text=text).found  # as search_graph runs it
        assert len(found) >= 3
        answer = {f.record.seq: f.fingerprint for f in found}
        measured = {f.record.seq: f.similarities for f in found}
        assert np.array_equal(np.stack(list(measured.values())),
                              context_similarities(by_space, query, list(answer.values())))
        handle = services.storage
        given = operation_pulse.score(handle, pipeline.embedders, query, pool=answer, pool_similarities=measured)
        computed = operation_pulse.score(handle, pipeline.embedders, query, pool=answer)
        assert given.delta_s == computed.delta_s and given.delta_c == computed.delta_c
        assert given.learning_score == computed.learning_score
    finally:
        services.close()
