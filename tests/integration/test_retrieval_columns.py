"""Stage 3 reads its candidates as one column per space (store.fingerprint_columns) instead of one decoded
fingerprint each: over a real LMDB store and the real pipeline, the ranking is byte-identical to the one made from
the fingerprints the store decodes per memory, with the modality filter and with stage 4 active; and inject_context's
path (Retriever.rank over fingerprints it already holds) ranks as run() does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextgraph.services.memory.search import ALL_SPACES, Retriever
from contextgraph.storage.fingerprint_columns import FingerprintColumns

pytestmark = pytest.mark.anyio
WHY = "column read integration test"
TEXTS = [
    "The deployment failed because the container ran out of memory.",
    "def parse_args(argv):\n    parser = build_parser()\n    return parser.parse_args(argv)",
    "The getHTTPResponse helper retries twice on a 503 before giving up.",
    "Sourdough needs a starter fed with flour and water every day.",
    "Yesterday the nightly backup job timed out after the disk filled up.",
    "class LruCache:\n    def get(self, key):\n        return self._data.get(key)",
    "Europa hides a salty ocean beneath its icy crust.",
    "The TLS certificate expired, so the ingress rejected every request.",
    "Caramel turns grainy if you stir it after the sugar melts.",
    "Because the index was stale, the search returned deleted memories.",
]
QUERIES = ["why did the container crash", "parse command line arguments", "http retries", "baking bread",
           "what happened yesterday with backups"]


class PerMemoryStore:
    """The store, with stage 3's read done the way it was before columns: one decoded fingerprint per memory."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def fingerprint_columns(self, seqs, spaces) -> FingerprintColumns:
        return FingerprintColumns.from_fingerprints(seqs, self._store.fingerprints(seqs), spaces)


def ranking(out) -> str:
    return json.dumps([[f.record.id, f.score, f.similarity, f.space_ranks, f.agreements, f.alignment]
                       for f in out.found])


async def test_column_read_ranks_exactly_as_the_per_memory_read(call, app):
    for text in TEXTS + [f"{t}\nNoted again later." for t in TEXTS]:  # a north star needs 20
        await call("store_memory", {"content": text, "rationale": WHY,
                                    "modality": "code" if text.startswith(("def ", "class ")) else "text"})
    storage, memory = app.services.storage, app.services.memory
    pipeline = await app.services.perception.pipeline()
    reference = storage.delta_sc.reference(storage.store, storage.indexes, pipeline.embedders)

    def retrievers(purpose):
        make = lambda store: Retriever(store, storage.indexes, pipeline.embedders,  # noqa: E731
                                       memory.retrieval_settings, reference, purpose)
        return make(storage.store), make(PerMemoryStore(storage.store))

    queries = {q: pipeline.embed([app.services.perception.draft(q, "text", None)])[0] for q in QUERIES}
    columns, per_memory = retrievers(None)
    compared = 0
    for q, fp in queries.items():
        for options in ({}, {"modality": "code"}, {"causal_direction": "forward"}):
            a = columns.run(fp, 8, query_text=q, **options)
            b = per_memory.run(fp, 8, query_text=q, **options)
            assert ranking(a) == ranking(b), (q, options)
            assert a.candidates == b.candidates
            compared += len(a.found)
    assert compared >= 2 * len(QUERIES)  # (a filtered query may find nothing: E1 cosine < min_similarity 0)

    await call("auto_bootstrap_north_star", {})
    view = app.services.purpose.teleology.star_view()
    assert view is not None
    columns, per_memory = retrievers(view)
    for q, fp in queries.items():
        a, b = columns.run(fp, 8, query_text=q), per_memory.run(fp, 8, query_text=q)
        assert a.stage4["active"] and a.stage4 == b.stage4
        assert ranking(a) == ranking(b)


async def test_rank_over_held_fingerprints_equals_run(call, app):
    """inject_context's related memories: Retriever.rank over fingerprints it already holds scores each space as
    the column read does."""
    for text in TEXTS:
        await call("store_memory", {"content": text, "rationale": WHY})
    storage, memory = app.services.storage, app.services.memory
    pipeline = await app.services.perception.pipeline()
    retriever = Retriever(storage.store, storage.indexes, pipeline.embedders, memory.retrieval_settings)
    seqs = list(range(1, storage.store.last_seq() + 1))
    fp = pipeline.embed([app.services.perception.draft(QUERIES[0], "text", None)])[0]
    fps = storage.store.fingerprints(seqs)
    columns = storage.store.fingerprint_columns(seqs, ALL_SPACES)
    scores = retriever.space_scores(fp, columns, "both")
    listed = retriever.space_scores(fp, fps, "both")
    assert all((scores[s] == listed[s]).all() for s in ALL_SPACES)
    # a memory deleted since the neighbourhood was read (None) is left out, as if never a candidate
    with_gap = retriever.rank(fp, seqs, [None, *fps[1:]], 5, query_text=QUERIES[0])
    without = retriever.rank(fp, seqs[1:], fps[1:], 5, query_text=QUERIES[0])
    assert with_gap.found and ranking(with_gap) == ranking(without)
    assert seqs[0] not in [f.record.seq for f in with_gap.found]
