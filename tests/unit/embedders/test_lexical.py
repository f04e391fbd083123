"""E6 hashed sparse, E9 HDC, E13 WordPiece sparse, and the sparse helpers they share."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.embedders.e06_sparse import BUCKETS, MAX_ACTIVE, SparseEmbedder, bucket, terms
from contextgraph.embedders.e09_hdc import HdcEmbedder, fold, hamming_similarity, hypervector
from contextgraph.fingerprint import Sparse
from contextgraph.vectors import sparse_dot_scores, sparse_from_counts

TWENTY_WORDS = (
    "The storage layer keeps every memory in LMDB and rebuilds the HNSW index from it whenever the server "
    "process starts"
)
UNRELATED = [
    "Yesterday we walked along the river with the dog and talked about holidays in Portugal next summer.",
    "Kuramoto oscillators synchronise once the coupling strength passes a critical value for the network.",
    "Please remember that the dentist appointment moved to Thursday afternoon at four o'clock sharp.",
]


def dense(v: Sparse, dim: int) -> np.ndarray:
    out = np.zeros(dim, dtype=np.float64)
    out[v.indices] = v.values
    return out


def test_e6_terms_weights_and_stable_hash():
    e6 = SparseEmbedder()
    v = e6.embed_text("Cache cache CACHE miss")
    assert terms("Cache miss") == ["cach", "miss"]  # the shared analyzer: lower-cased, stemmed
    weights = dict(zip(v.indices.tolist(), v.values.tolist()))
    assert weights == {bucket("cach"): 3.0, bucket("miss"): 1.0}  # raw term frequencies: BM25 at query time
    # CRC-32 mod 2^18: the same in every process and on every machine (Python's hash() is salted per process).
    assert (bucket("cach"), bucket("miss")) == (260072, 2782)
    assert v.indices.dtype == np.int32 and v.values.dtype == np.float32
    assert np.all(np.diff(v.indices) > 0) and v.indices.max() < BUCKETS


def test_e6_splits_identifiers_and_keeps_them_whole():
    e6 = SparseEmbedder()
    v = set(e6.embed_text("call parse_args() on argv").indices.tolist())
    assert {bucket("parse_args"), bucket("pars"), bucket("arg"), bucket("argv")} <= v
    q = e6.embed_text("parse the args")
    docs = [e6.embed_text("def parse_args(argv): ..."), e6.embed_text("holiday photos from Portugal")]
    scores = e6.similarity(q, docs)
    assert scores[0] > 0 and scores[1] == 0


def test_e6_caps_active_buckets():
    e6 = SparseEmbedder()
    text = " ".join(f"w{i} w{i % 7}" for i in range(6000))
    v = e6.embed_text(text)
    assert len(v) == MAX_ACTIVE == 4096
    # the heaviest terms survive: "w0".."w6" occur ~860 times each
    assert all(bucket(f"w{i}") in set(v.indices.tolist()) for i in range(7))


def test_e6_similarity_prefers_shared_terms():
    e6 = SparseEmbedder()
    q = e6.embed_text("stale cache build failure")
    docs = [e6.embed_text("the build failed: stale cache"), e6.embed_text("holiday photos from Portugal")]
    scores = e6.similarity(q, docs)
    assert scores[0] > 0 and scores[1] == 0


def test_e9_typo_keeps_hamming_similarity_high():
    e9 = HdcEmbedder()
    assert len(TWENTY_WORDS.split()) == 20
    typo = TWENTY_WORDS.replace("rebuilds", "rebiulds")
    base = e9.embed_text(TWENTY_WORDS)
    assert base.shape == (128,) and base.dtype == np.uint8
    typo_sim = e9.similarity(base, [e9.embed_text(typo)])[0]
    unrelated = e9.similarity(base, [e9.embed_text(t) for t in UNRELATED])
    assert typo_sim > 0.8 and unrelated.max() < 0.65 and typo_sim - unrelated.max() > 0.2, (typo_sim, unrelated)
    assert e9.similarity(base, [base])[0] == 1.0


def test_e9_is_case_and_spacing_insensitive_but_order_sensitive():
    e9 = HdcEmbedder()
    a = e9.embed_text("dog bites man")
    assert np.array_equal(a, e9.embed_text("  Dog   BITES man "))
    assert e9.similarity(a, [e9.embed_text("man bites dog")])[0] < 1.0


sixteen_bytes = st.lists(st.integers(0, 255), min_size=16, max_size=16)


@given(sixteen_bytes, st.lists(sixteen_bytes, min_size=1, max_size=5))
def test_hamming_similarity_matches_naive(query, docs):
    q = np.array(query, dtype=np.uint8)
    d = np.array(docs, dtype=np.uint8)
    naive = [1 - np.sum(np.unpackbits(q) != np.unpackbits(row)) / 128 for row in d]
    np.testing.assert_allclose(hamming_similarity(q, d), naive, atol=1e-6)


def test_fold_is_majority_by_position():
    bits = np.zeros(10_000, dtype=bool)
    bits[np.arange(5, 10_000, 1024)] = True  # every source bit of folded position 5 set
    folded = fold(bits)
    assert folded[5] and folded.sum() <= 1024
    assert hypervector("abc").shape == (10_000,)


sparse_maps = st.dictionaries(st.integers(0, 499), st.floats(-10, 10, allow_nan=False, width=32), max_size=40)


@settings(max_examples=60)
@given(sparse_maps, st.lists(sparse_maps, max_size=6))
def test_sparse_dot_matches_dense(query, docs):
    def make(m):
        keys = sorted(m)
        return Sparse(np.array(keys, dtype=np.int32), np.array([m[k] for k in keys], dtype=np.float32))

    q, ds = make(query), [make(d) for d in docs]
    expected = [float(dense(q, 500) @ dense(d, 500)) for d in ds]
    np.testing.assert_allclose(sparse_dot_scores(q, ds), expected, rtol=1e-5, atol=1e-4)


@given(st.lists(st.integers(0, 60), max_size=200), st.integers(1, 30))
def test_sparse_from_counts_matches_counter(keys, cap):
    v = sparse_from_counts(np.array(keys, dtype=np.int64), cap=cap)
    counts = Counter(keys)
    assert len(v) == min(cap, len(counts))
    assert np.all(np.diff(v.indices) > 0)
    for k, value in zip(v.indices.tolist(), v.values.tolist()):
        assert value == np.float32(np.log1p(counts[k]))
    if len(counts) > cap:  # kept weights are at least every dropped weight
        dropped = [c for k, c in counts.items() if k not in set(v.indices.tolist())]
        assert min(np.expm1(v.values).round()) >= max(dropped)
