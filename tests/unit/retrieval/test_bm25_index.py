"""The sparse index scores BM25 (SPEC D21): against a naive formula and the bm25s library, and its length
statistics survive removal, compaction, save/load."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.embedders.e06_sparse import tf_vector
from contextgraph.fingerprint import Sparse
from contextgraph.storage.sparse_index import SparseIndex

docs_strategy = st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=25), min_size=1, max_size=15)


def naive_bm25(query_terms, docs, k1, b):
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    out = []
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for t in set(query_terms):
            df = sum(1 for x in docs if t in x)
            if tf[t]:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return np.array(out)


def vec(terms):
    return tf_vector(np.array(terms, dtype=np.int64))


@settings(max_examples=60, deadline=None)
@given(docs_strategy, st.lists(st.integers(0, 35), min_size=1, max_size=6), st.sampled_from([(1.2, 0.75), (0.9, 0.4)]))
def test_score_and_search_match_naive_bm25(docs, query, params):
    k1, b = params
    index = SparseIndex()
    index.add(list(range(1, len(docs) + 1)), [vec(d) for d in docs])
    expected = naive_bm25(query, docs, k1, b)
    got = index.score(vec(query), [vec(d) for d in docs], k1=k1, b=b)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-9)
    hits = index.search(vec(query), len(docs), k1=k1, b=b)
    for seq, score in hits:
        assert score == pytest.approx(expected[seq - 1], rel=1e-5)
    assert {seq for seq, _ in hits} == {i + 1 for i, e in enumerate(expected) if e > 0}


def test_ranking_matches_bm25s():
    bm25s = pytest.importorskip("bm25s")
    rng = np.random.default_rng(3)
    corpus = [[f"w{t}" for t in rng.integers(0, 40, size=rng.integers(3, 30))] for _ in range(60)]
    vocab = {w: i for i, w in enumerate(sorted({w for d in corpus for w in d}))}
    index = SparseIndex()
    index.add(list(range(60)), [vec([vocab[w] for w in d]) for d in corpus])
    ref = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    ref.index(bm25s.tokenization.Tokenized(ids=[[vocab[w] for w in d] for d in corpus], vocab=vocab),
              show_progress=False)
    for q in (["w1", "w2"], ["w7"], ["w3", "w3", "w30", "w11"]):
        ids = [vocab[w] for w in q]
        expected = ref.get_scores([vocab[w] for w in dict.fromkeys(q)]) * (1.2 + 1)  # bm25s leaves out (k1 + 1)
        got = index.score(vec(ids), [vec([vocab[w] for w in d]) for d in corpus], k1=1.2, b=0.75)
        np.testing.assert_allclose(got, expected, rtol=1e-4)


def assert_same(hits, expected):
    assert [s for s, _ in hits] == [s for s, _ in expected]
    np.testing.assert_allclose([x for _, x in hits], [x for _, x in expected], rtol=1e-9)


def test_length_statistics_follow_removal_compaction_and_reload(tmp_path):
    index = SparseIndex()
    docs = {s: vec([s % 7] * (1 + s % 5) + [100 + s]) for s in range(1, 2001)}
    index.add(list(docs), list(docs.values()))
    for s in range(1, 2001, 2):
        index.remove(s)  # enough tombstones to compact
    live = {s: v for s, v in docs.items() if s % 2 == 0}
    expected_avg = np.mean([float(v.values.sum()) for v in live.values()])
    assert index.avgdl() == pytest.approx(expected_avg)
    q = vec([3, 4])
    before = index.search(q, 20)
    index.save(tmp_path / "e06.npz")
    loaded = SparseIndex.load(tmp_path / "e06.npz")
    assert loaded.avgdl() == pytest.approx(expected_avg)
    assert_same(loaded.search(q, 20), before)
    # a fresh index of the live documents only scores the same
    fresh = SparseIndex()
    fresh.add(list(live), list(live.values()))
    assert_same(fresh.search(q, 20), before)


def test_empty_query_and_unknown_terms():
    index = SparseIndex()
    index.add([1], [vec([1, 2])])
    assert index.search(Sparse(np.zeros(0, np.int32), np.zeros(0, np.float32)), 5) == []
    assert index.search(vec([99]), 5) == []
    assert index.score(vec([99]), [vec([1])]).tolist() == [0.0]


def test_a_loaded_index_grows_like_one_that_was_never_saved(tmp_path):
    """Every loaded posting list is the index's own (a long one with room to spare), so appends after a load,
    to short and long lists alike, score exactly as an index built in one go; the saved one is left as it was."""
    rng = np.random.default_rng(8)
    docs = [vec([0] * int(rng.integers(1, 3)) + rng.integers(1, 60, 6).tolist()) for _ in range(5_000)]  # 0: long
    index = SparseIndex()
    index.add(list(range(1, 4_501)), docs[:4_500])
    index.save(tmp_path / "e13.npz")
    loaded = SparseIndex.load(tmp_path / "e13.npz")
    for seq in range(4_501, 5_001):  # one at a time, as store_memory adds them
        loaded.add([seq], [docs[seq - 1]])
    whole = SparseIndex()
    whole.add(list(range(1, 5_001)), docs)
    for q in (vec([0, 5]), vec([7, 8, 9]), vec([0])):
        assert_same(loaded.search(q, 50), whole.search(q, 50))
    assert_same(SparseIndex.load(tmp_path / "e13.npz").search(vec([0, 5]), 50), index.search(vec([0, 5]), 50))
