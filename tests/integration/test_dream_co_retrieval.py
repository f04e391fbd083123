"""NREM strengthens the edges of memories that searches retrieved together (docs/engine.md#nrem): real searches
through search_graph, a real LMDB store; the replay itself is given no time, so only the co-retrieval moves
weights."""

import asyncio
import itertools

import pytest

from contextgraph.storage.base import Edge

pytestmark = pytest.mark.anyio
WHY = "checking what retrieving memories together does in a dream"
TEXTS = (
    "The nightly export job writes parquet files to the analytics bucket.",
    "The analytics bucket keeps parquet exports for ninety days.",
    "Parquet exports are compressed with zstd before upload to the bucket.",
    "Our office plants are watered on Tuesdays by the facilities team.",
    "The facilities team also restocks the coffee machine.",
)


def weights(app):
    def read(g):
        return {(e.source, e.target, e.type): e.weight for r in g.recent(100, None, None) for e in g.edges_out(r.id)}

    return app.services.storage.store.graph_read(read)


async def test_pairs_retrieved_together_twice_have_their_edges_strengthened_in_nrem(app, call):
    ids = [(await call("store_memory", {"content": t, "rationale": WHY, "session_id": f"s{i}"})).payload["id"]
           for i, t in enumerate(TEXTS)]
    # every pair joined by a Relational edge of weight 0.5: which of them strengthen is the co-retrieval's doing
    app.services.storage.store.graph_write(lambda g: [g.put_edge(Edge(a, b, "Relational", weight=0.5))
                                                      for a, b in itertools.combinations(ids, 2)])
    for _ in range(2):
        await call("search_graph", {"query": "parquet exports in the analytics bucket", "topK": 3})
    await app.services.memory.settled()  # the co-retrieval is heard after the answer (D24)
    together = {frozenset(p) for p, c in app.services.dream.co_retrieval.counts.items() if c >= 2}
    assert together, app.services.dream.co_retrieval.counts
    before = weights(app)

    dream = app.services.dream
    dream.nrem_seconds = 0.0  # no replay: the co-retrieved pairs are strengthened before it starts
    await dream.trigger("nrem", force=True)
    for _ in range(600):
        if not dream.dreaming:
            break
        await asyncio.sleep(0.05)
    report = dream.reports[-1]
    after = weights(app)

    changed = {frozenset(k[:2]) for k in before if after[k] != before[k]}
    assert changed == together
    eta, decay = dream.rule.eta, dream.rule.decay
    for k in before:
        if frozenset(k[:2]) in together:
            assert after[k] == pytest.approx(min(1.0, before[k] * (1 - decay) + eta))
    assert report["co_retrieved_edges_strengthened"] == len([k for k in before if frozenset(k[:2]) in together])
    assert dream.co_retrieval.counts == {} or all(c < 2 for c in dream.co_retrieval.counts.values())


def test_co_retrieval_counts_are_bounded_and_survive_the_dream_state_document():
    from contextgraph.constitution import constitution
    from contextgraph.services.dreams.co_retrieval import CoRetrieval

    counts = CoRetrieval(constitution())
    counts.max_pairs = 4
    counts.record(["a", "b", "c", "d"])  # the first 3 only: a-b, a-c, b-c
    counts.record(["b", "a", "e"])
    # 5 pairs over the bound of 4: the most retrieved half stays (ties in the order they were first seen)
    assert counts.counts == {("a", "b"): 2, ("a", "c"): 1}
    again = CoRetrieval(constitution())
    again.load_doc(counts.to_doc())
    assert again.counts == counts.counts
    assert again.drain() == [("a", "b")] and ("a", "b") not in again.counts
