"""The PostgreSQL search (storage/postgres/search.py) against the LMDB backend's indexes on the same memories:
BM25 over the postings in SQL, and from the in-process sparse cache, equals SparseIndex exactly (the same seqs
and scores, with max_df and tuned k1/b), score_sparse equals it for any documents, the HNSW and Hamming searches
find what the exact measures rank first and score it the same; deletes and rewrites are searchable when they
commit; the planner uses HNSW."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_fakes import fingerprint, record

from contextgraph.fingerprint import Sparse
from contextgraph.storage.indexes import INDEXED_SPACES, IndexSet
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.postgres.schema import HNSW_SPACES
from contextgraph.storage.postgres.search import PgIndexes, bm25_scores, idf
from contextgraph.storage.postgres.store import PgStore
from contextgraph.storage.postgres.vectors import as_param
from contextgraph.storage.sparse_index import SparseIndex

N = 120


@pytest.fixture(scope="module")
def twin(tmp_path_factory, postgres_server):
    """The same N memories (and one delete) in an LMDB store with its IndexSet and in PostgreSQL; the sparse
    tests run on both PostgreSQL paths (`sparse_paths`)."""
    import uuid

    import psycopg

    name = f"cg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    pg = PgStore(postgres_server.get_uri(name))
    lm = LmdbStore(tmp_path_factory.mktemp("lmdb") / "store")
    rng = np.random.default_rng(5)
    fps = []
    for i in range(N):
        # small vocabularies so that the sparse spaces share terms (df > 1, max_df bites)
        fp = fingerprint(rng, tokens=4, e6_nnz=30, e13_nnz=12)
        terms = np.unique(rng.integers(0, 200, 30)).astype(np.int32)
        fp[6] = Sparse(terms, np.log1p(rng.integers(1, 4, len(terms))).astype(np.float32))
        rec = record(content=f"m{i}")
        pg.put(rec, fp)
        lm.put(rec, fp)
        fps.append(fp)
    gone = pg.get_by_seq([7])[0]
    assert gone is not None
    pg.delete(gone.id)
    lm.delete(gone.id)
    indexes = IndexSet(lm)
    indexes.catch_up()
    cached = PgIndexes(pg, tmp_path_factory.mktemp("pg-sparse") / "indexes")
    yield PgIndexes(pg), indexes, fps, cached
    pg.close()
    lm.close()


def sparse_paths(twin) -> list[PgIndexes]:
    """E2-E4, E6 and E13 searched in SQL, and from the in-process indexes."""
    return [twin[0], twin[3]]


def test_bm25_search_equals_the_sparse_index(twin):
    _, lmi, fps, _ = twin
    rng = np.random.default_rng(1)
    for pgi, space in ((pgi, space) for pgi in sparse_paths(twin) for space in (6, 13)):
        for _ in range(10):
            query = fps[int(rng.integers(0, N))][space]
            for max_df, bm25 in ((1.0, {}), (0.3, {"k1": 0.9, "b": 0.4})):
                got = pgi.search(space, query, 15, max_df, **bm25)
                want = lmi.search(space, query, 15, max_df, **bm25)
                assert [s for s, _ in got] == [s for s, _ in want]
                np.testing.assert_allclose([x for _, x in got], [x for _, x in want], rtol=1e-9)


def test_score_sparse_equals_the_sparse_index(twin):
    _, lmi, fps, _ = twin
    docs = [fps[i][6] for i in range(0, N, 7)]
    for pgi in sparse_paths(twin):
        for query in (fps[3][6], fps[50][6], Sparse(np.array([5, 99999], np.int32), np.ones(2, np.float32))):
            np.testing.assert_allclose(pgi.score_sparse(6, query, docs, k1=1.1, b=0.6),
                                       lmi.score_sparse(6, query, docs, k1=1.1, b=0.6), rtol=1e-9)


def test_sparse_idf_is_the_idf_score_sparse_weighs_by(twin):
    """Each backend's idf of a term (repeats and unknown terms included) is what a one-term document with tf 1
    scores under BM25 with k1 = 1, b = 0: the idf that score_sparse multiplies in."""
    _, lmi, fps, _ = twin
    terms = np.concatenate([fps[3][6].indices, fps[3][6].indices[:2], [99999]]).astype(np.int64)
    ones = np.ones(1, np.float32)
    one_term = [Sparse(np.array([t], np.int32), ones) for t in terms.tolist()]
    query = Sparse(np.unique(terms).astype(np.int32), np.ones(len(np.unique(terms)), np.float32))
    for index in (*sparse_paths(twin), lmi):
        np.testing.assert_allclose(index.sparse_idf(6, terms), index.score_sparse(6, query, one_term, k1=1.0, b=0.0),
                                   rtol=1e-12)
    for pgi in sparse_paths(twin):
        np.testing.assert_allclose(pgi.sparse_idf(6, terms), lmi.sparse_idf(6, terms), rtol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 40), st.integers(1, 5), min_size=0, max_size=8), min_size=1,
                max_size=12), st.sets(st.integers(0, 45), min_size=1, max_size=6),
       st.floats(0.3, 2.0), st.floats(0.0, 1.0))
def test_bm25_kernel_equals_sparse_index_score(docs, query_terms, k1, b):
    """The client-side kernel against SparseIndex.score (the LMDB reference) on random collections."""
    vecs = [Sparse(np.array(sorted(d), np.int32), np.array([d[t] for t in sorted(d)], np.float32)) for d in docs]
    index = SparseIndex()
    index.add(list(range(1, len(vecs) + 1)), vecs)
    terms = np.array(sorted(query_terms), np.int64)
    query = Sparse(terms.astype(np.int32), np.ones(len(terms), np.float32))
    df = np.array([sum(t in d for d in docs) for t in terms.tolist()], np.float64)
    got = bm25_scores(terms, idf(df, len(vecs)), vecs, index.avgdl(), k1, b)
    np.testing.assert_allclose(got, index.score(query, vecs, k1=k1, b=b), rtol=1e-12, atol=1e-12)


def test_dense_and_binary_search_find_the_exact_nearest(twin):
    """HNSW (E1, E5, E9), E1's candidates re-scored (E8, E10), the timeline (E2-E4: in the process, or an exact
    scan in SQL without a directory): each finds what LMDB's index does."""
    _, lmi, fps, _ = twin
    for pgi, space in ((pgi, space) for pgi in sparse_paths(twin) for space in (1, 2, 3, 4, 5, 8, 9, 10)):
        for i in (0, 33, 90):
            got = pgi.search(space, fps[i][space], 5)
            want = lmi.search(space, fps[i][space], 5)
            assert got[0][0] == want[0][0] == i + 1  # a stored vector finds itself first
            assert got[0][1] == pytest.approx(want[0][1], abs=1e-4)
            # 120 vectors: HNSW is exact on both here; equal scores may tie in either order (E9's Hamming)
            assert [sc for _, sc in got] == pytest.approx([sc for _, sc in want], abs=1e-4), space
            assert {s for s, sc in got if sc > got[-1][1] + 1e-4} <= {s for s, _ in want}, space
    for pgi in sparse_paths(twin):  # the deleted memory (seq 7) is gone
        assert 7 not in {s for space in (1, 2, 8) for s, _ in pgi.search(space, fps[6][space], 10)}


def test_sizes_and_larger_k_than_ef_search(twin):
    pgi, lmi, _, cached = twin
    assert pgi.sizes() == lmi.sizes() == cached.sizes()
    assert set(pgi.sizes()) == set(INDEXED_SPACES)
    assert len(pgi.search(1, np.ones(384, np.float32), 100)) == 100  # ef_search raised to k for the query


def test_the_planner_uses_the_hnsw_indexes(twin):
    pgi, _, fps, _ = twin
    with pgi.store.connection() as conn:
        conn.execute("SET enable_seqscan = off")  # 120 rows: without it a scan is cheaper and chosen
        for space, op in ((1, "<=>"), (5, "<=>"), (9, "<~>")):
            param = as_param(space, fps[0][space], pgi.store.space_types()[space][1])
            plan = "\n".join(r[0] for r in conn.execute(
                f"EXPLAIN SELECT seq FROM vec_e{space:02d} ORDER BY v {op} %s LIMIT 5", (param,)).fetchall())
            assert f"vec_e{space:02d}_hnsw" in plan
        conn.execute("RESET enable_seqscan")
    assert sorted(index_names_of(pgi)) == [f"vec_e{s:02d}_hnsw" for s in HNSW_SPACES]  # no graph for E2-E4, E8, E10


def index_names_of(pgi: PgIndexes) -> list[str]:
    from contextgraph.storage.postgres.schema import index_names

    with pgi.store.connection() as conn:
        return list(index_names(conn))
