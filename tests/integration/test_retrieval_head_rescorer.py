"""Stage 3's learned head re-scorer (retrieval/head_rescorer.py) wired into the Retriever over a real store and the
real pipeline: with `head_rescorer` on, the answer holds the same memories in the order of the module applied by
hand to the fused scores (the head's fused scores dealt again in the model's order)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from contextgraph.fingerprint import MODALITIES, Sparse
from contextgraph.retrieval import head_rescorer as hr
from contextgraph.retrieval.fusion import fuse, ranks
from contextgraph.services.memory.search import ALL_SPACES, SPARSE, Retriever

pytestmark = pytest.mark.anyio
WHY = "head re-scorer integration test"
TEXTS = [
    "The deployment failed because the container ran out of memory.",
    "def parse_args(argv):\n    parser = build_parser()\n    return parser.parse_args(argv)",
    "The getHTTPResponse helper retries twice on a 503 before giving up.",
    "Sourdough needs a starter fed with flour and water every day.",
    "The nightly backup job timed out after the disk filled up.",
    "class LruCache:\n    def get(self, key):\n        return self._data.get(key)",
    "Europa hides a salty ocean beneath its icy crust.",
    "The TLS certificate expired, so the ingress rejected every request.",
    "Because the index was stale, the search returned deleted memories.",
]
QUERIES = ["why did the container crash", "parse command line arguments", "http retries", "baking bread"]


async def test_the_rescored_answer_is_the_fused_head_dealt_in_the_models_order(call, app):
    for text in [f"{t}{suffix}" for suffix in ("", "\nNoted again.", "\nSee also the runbook.", "\nFrom the review.")
                 for t in TEXTS]:  # more candidates than the models' heads (30): a shorter list is left as fused
        await call("store_memory", {"content": text, "rationale": WHY,
                                    "modality": "code" if text.startswith(("def ", "class ")) else "text"})
    storage, memory = app.services.storage, app.services.memory
    pipeline = await app.services.perception.pipeline()
    plain_settings = dataclasses.replace(memory.retrieval_settings, head_rescorer=False)
    on = Retriever(storage.store, storage.indexes, pipeline.embedders,
                   dataclasses.replace(plain_settings, head_rescorer=True))
    off = Retriever(storage.store, storage.indexes, pipeline.embedders, plain_settings)
    seqs = list(range(1, storage.store.last_seq() + 1))
    columns = storage.store.fingerprint_columns(seqs, ALL_SPACES)
    moved = 0
    for q in QUERIES:
        fp = pipeline.embed([app.services.perception.draft(q, "text", None)])[0]
        a, b = on.rank(fp, seqs, storage.store.fingerprints(seqs), len(seqs), query_text=q), \
            off.rank(fp, seqs, storage.store.fingerprints(seqs), len(seqs), query_text=q)
        assert sorted(f.record.seq for f in a.found) == sorted(f.record.seq for f in b.found)
        assert a.found[0].score == b.found[0].score == 1.0  # the head keeps its scores' scale
        # by hand: the module over the same fused scores
        scores = off.space_scores(fp, columns, "both")
        s = plain_settings
        fused = fuse(scores, s.weights_for(q), s.rrf_k, s.score_weights, {k: ranks(v) for k, v in scores.items()})
        terms = np.asarray(fp[SPARSE].indices)
        idf = storage.indexes.score_sparse(SPARSE, fp[SPARSE], [Sparse(np.array([t], dtype=np.int32),
                                                                       np.ones(1, dtype=np.float32)) for t in terms],
                                           k1=1.0, b=0.0)
        expected = hr.rescore_head(fused, scores, terms, idf, columns[SPARSE],
                                   {sp: columns[sp] for sp in hr.DENSE}, columns[hr.MODALITY_SPACE], MODALITIES)
        found = {f.record.seq for f in a.found}  # (min_similarity leaves out a memory at a negative E1 cosine)
        order = [columns.seqs[i] for i in np.argsort(-expected, kind="stable") if columns.seqs[i] in found]
        assert [f.record.seq for f in a.found] == order
        moved += [f.record.seq for f in a.found] != [f.record.seq for f in b.found]
    assert moved >= 1
