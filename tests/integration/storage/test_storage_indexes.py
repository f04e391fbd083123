"""Each index against a brute-force reference; the IndexSet against the store (rebuild, catch-up, save/load)."""

from __future__ import annotations

import numpy as np
import pytest
from storage_fakes import DENSE_DIMS, fingerprint, record, sparse

from contextgraph.errors import DimensionMismatch
from contextgraph.fingerprint import Sparse
from contextgraph.storage.binary_index import BinaryIndex
from contextgraph.storage.hnsw_index import DenseIndex
from contextgraph.storage.indexes import INDEXED_SPACES, IndexSet
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.sparse_index import SparseIndex


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# --- DenseIndex ------------------------------------------------------------------------------------------------

def _recall_at_10(index: DenseIndex, data: np.ndarray, queries: np.ndarray) -> float:
    exact = _unit(queries) @ _unit(data).T
    recall = []
    for q, row in zip(queries, exact):
        truth = set((np.argsort(-row)[:10] + 1).tolist())
        hits = index.search(q, 10)
        recall.append(len(truth & {s for s, _ in hits}) / 10)
        s0, score0 = hits[0]
        assert score0 == pytest.approx(row[s0 - 1], abs=1e-4)  # score = cosine similarity
    return float(np.mean(recall))


def test_dense_recall_at_10_on_2k_random_vectors():
    rng = np.random.default_rng(0)
    # clustered, like real embeddings (MEASUREMENTS: MiniLM at 100K, ef 64 → 0.979)
    centers = rng.standard_normal((50, 384))
    data = (centers[rng.integers(0, 50, 2000)] + 0.5 * rng.standard_normal((2000, 384))).astype(np.float32)
    queries = (centers[rng.integers(0, 50, 50)] + 0.5 * rng.standard_normal((50, 384))).astype(np.float32)
    index = DenseIndex(384, "cosine", capacity=100)  # grows ×2 on the way
    seqs = np.arange(1, 2001)
    index.add(seqs[:1000], data[:1000])
    for i in range(1000, 1100):  # one at a time, the writer's path
        index.add([seqs[i]], data[i : i + 1])
    index.add(seqs[1100:], data[1100:])
    assert len(index) == 2000
    assert _recall_at_10(index, data, queries) >= 0.95
    # Isotropic Gaussian vectors are HNSW's worst case (all distances alike): ef 64 gives only ~0.80 there,
    # ef 200 ≥ 0.95. Real embeddings are nothing like it, but the knob must work.
    noise = rng.standard_normal((2000, 384)).astype(np.float32)
    hard = DenseIndex(384, "cosine", ef_search=200)
    hard.add(seqs, noise)
    assert _recall_at_10(hard, noise, rng.standard_normal((50, 384)).astype(np.float32)) >= 0.95


def test_dense_inner_product_scores_and_removal():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((200, 16)).astype(np.float32)
    index = DenseIndex(16, "ip")
    index.add(range(1, 201), data)
    q = rng.standard_normal(16).astype(np.float32)
    best, score = index.search(q, 1)[0]
    assert score == pytest.approx(float(data[best - 1] @ q), rel=1e-4)
    index.remove(best)
    index.remove(best)  # idempotent
    index.remove(12345)
    assert len(index) == 199 and best not in {s for s, _ in index.search(q, 199)}


def test_dense_readd_updates_in_place_and_revives_without_duplicates():
    rng = np.random.default_rng(2)
    data = rng.standard_normal((50, 8)).astype(np.float32)
    index = DenseIndex(8, "cosine")
    index.add(range(1, 51), data)
    index.remove(5)
    index.remove(6)
    index.add([5], data[0:1])  # revive 5 with seq 1's vector
    index.add([51], data[1:2])  # a new label takes a vacant slot
    index.add([7], data[2:3])  # update a live label
    assert len(index) == 50
    hits = index.search(data[0], 50)
    labels = [s for s, _ in hits]
    assert len(labels) == len(set(labels)) == 50
    assert {1, 5} <= set(labels[:2]) and 6 not in labels


def test_dense_dimension_is_checked(tmp_path):
    index = DenseIndex(4)
    with pytest.raises(ValueError):
        index.add([1], np.zeros((1, 5), np.float32))


def test_dense_save_load(tmp_path):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((300, 32)).astype(np.float32)
    index = DenseIndex(32, "cosine", ef_search=80)
    index.add(range(1, 301), data)
    index.remove(3)
    index.save(tmp_path / "e01.hnsw")
    loaded = DenseIndex.load(tmp_path / "e01.hnsw")
    assert len(loaded) == 299 and loaded.ef_search == 80
    assert loaded.search(data[9], 5) == index.search(data[9], 5)
    loaded.add([3], data[2:3])
    assert loaded.search(data[2], 1)[0][0] == 3


# --- SparseIndex -----------------------------------------------------------------------------------------------

def _reference_scores(docs: dict[int, Sparse], query: Sparse, dim: int) -> dict[int, float]:
    seqs = sorted(docs)
    m = np.zeros((len(seqs), dim))
    for row, seq in enumerate(seqs):
        m[row, docs[seq].indices] = docs[seq].values
    df = (m != 0).sum(axis=0)
    n = len(seqs)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    # BM25 (k1 1.2, b 0.75) over the query's distinct terms; a document's length is the sum of its frequencies
    k1, b = 1.2, 0.75
    dl = m.sum(axis=1, keepdims=True)
    saturated = m * (k1 + 1) / (m + k1 * (1 - b + b * dl / dl.mean()))
    q = np.zeros(dim)
    q[query.indices] = 1.0
    scores = saturated @ (q * idf)
    shares = (m[:, query.indices] != 0).any(axis=1)
    return {seq: float(s) for seq, s, ok in zip(seqs, scores, shares) if ok}


def _check_sparse(index: SparseIndex, docs: dict[int, Sparse], rng, dim: int) -> None:
    for _ in range(10):
        query = sparse(rng, dim, 12)
        ref = _reference_scores(docs, query, dim)
        got = index.search(query, len(docs) + 5)
        assert {s for s, _ in got} == set(ref)
        for seq, score in got:
            assert score == pytest.approx(ref[seq], rel=1e-5)
        assert [sc for _, sc in got] == sorted((sc for _, sc in got), reverse=True)
        top = index.search(query, 5)
        assert [s for s, _ in top] == [s for s, _ in got[:5]]
        some = list(docs)[:20]
        assert index.score(query, [docs[s] for s in some]) == pytest.approx([ref.get(s, 0.0) for s in some], rel=1e-5)


def test_sparse_matches_a_dense_reference_through_adds_deletes_and_compaction(monkeypatch):
    import contextgraph.storage.sparse_index as mod

    monkeypatch.setattr(mod, "_COMPACT_MIN", 50)
    rng = np.random.default_rng(4)
    dim = 300  # small vocabulary: many shared terms, real document frequencies
    docs = {seq: sparse(rng, dim, int(rng.integers(1, 30))) for seq in range(1, 401)}
    index = SparseIndex()
    index.add(list(range(1, 301)), [docs[s] for s in range(1, 301)])  # a batch
    for seq in range(301, 401):  # one at a time
        index.add([seq], [docs[seq]])
    _check_sparse(index, docs, rng, dim)
    for seq in range(1, 41):  # tombstones (below the compaction threshold)
        index.remove(seq)
        del docs[seq]
    assert index._n_dead == 40
    _check_sparse(index, docs, rng, dim)
    for seq in range(41, 141):  # crosses the threshold: compaction
        index.remove(seq)
        del docs[seq]
    assert index._n_dead < 50 and len(index) == len(docs)
    _check_sparse(index, docs, rng, dim)
    docs[200] = sparse(rng, dim, 5)  # re-adding replaces
    index.add([200], [docs[200]])
    _check_sparse(index, docs, rng, dim)


def test_sparse_save_load_and_empty_cases(tmp_path):
    rng = np.random.default_rng(5)
    empty = SparseIndex()
    assert empty.search(sparse(rng, 100, 3), 5) == []
    docs = {seq: sparse(rng, 500, 10) for seq in range(1, 101)}
    index = SparseIndex()
    index.add(list(docs), list(docs.values()))
    index.add([101], [Sparse(np.zeros(0, np.int32), np.zeros(0, np.float32))])  # an empty document
    index.remove(7)
    del docs[7]
    index.save(tmp_path / "e13.npz")
    loaded = SparseIndex.load(tmp_path / "e13.npz")
    q = sparse(rng, 500, 40)
    assert loaded.search(q, 10) == index.search(q, 10)
    docs[102] = sparse(rng, 900, 10)  # appending after load copies the views out; new terms grow the table
    loaded.add([102], [docs[102]])
    _ = loaded.search(q, 3)
    assert loaded.search(docs[102], 1)[0][0] == 102


# --- BinaryIndex -----------------------------------------------------------------------------------------------

def test_binary_is_exact_hamming(tmp_path):
    rng = np.random.default_rng(6)
    rows = rng.integers(0, 256, size=(3000, 128), dtype=np.uint8)
    index = BinaryIndex(1024, capacity=16)
    index.add(range(1, 3001), rows)
    for seq in range(1, 3001, 7):
        index.remove(seq)
    live = [s for s in range(1, 3001) if (s - 1) % 7]
    bits = np.unpackbits(rows, axis=1)
    for _ in range(5):
        q = rng.integers(0, 256, size=128, dtype=np.uint8)
        naive = (bits != np.unpackbits(q)).sum(axis=1)
        got = index.search(q, 20)
        want = sorted(live, key=lambda s: naive[s - 1])[:20]
        assert [naive[s - 1] for s, _ in got] == [naive[s - 1] for s in want]
        assert all(score == pytest.approx(1 - naive[s - 1] / 1024) for s, score in got)
    index.save(tmp_path / "e09.npz")
    loaded = BinaryIndex.load(tmp_path / "e09.npz")
    assert len(loaded) == len(live) and loaded.search(rows[1], 3) == index.search(rows[1], 3)
    loaded.add([2], rows[5:6])  # replace
    assert loaded.search(rows[5], 2)[0][1] == 1.0 and len(loaded) == len(live)



@pytest.mark.parametrize("bits", [1024, 200])  # 200: rows padded to whole words
def test_binary_distances_are_exact_across_chunks_and_after_a_load(tmp_path, bits):
    from contextgraph.storage import binary_index

    rng = np.random.default_rng(bits)
    n = binary_index._CHUNK + 1_000  # two passes, the second partial
    rows = rng.integers(0, 256, size=(n, bits // 8), dtype=np.uint8)
    index = BinaryIndex(bits)
    index.add(range(1, n + 1), rows)
    q = rng.integers(0, 256, size=bits // 8, dtype=np.uint8)
    naive = np.unpackbits(rows ^ q, axis=1).sum(axis=1)
    assert np.array_equal(index.distances(q), naive)
    index.save(tmp_path / "e09.npz")
    loaded = BinaryIndex.load(tmp_path / "e09.npz")
    loaded.add([n + 1], q.reshape(1, -1))  # into the room a load leaves
    assert np.array_equal(loaded.distances(q), np.append(naive, 0))


# --- IndexSet --------------------------------------------------------------------------------------------------

def _fill(store, rng, n, tokens=2):
    return [store.put(record(), fingerprint(rng, tokens=tokens, e6_nnz=40, e13_nnz=15)) for _ in range(n)]


def _answers(indexes: IndexSet, queries) -> dict:
    return {(space, i): [s for s, _ in indexes.search(space, q[space], 10)]
            for i, q in enumerate(queries) for space in INDEXED_SPACES}


def test_rebuild_equals_incremental(tmp_path):
    rng = np.random.default_rng(8)
    # ef_search 200: both graphs search ~all 270 live memories, so a difference is bookkeeping, not HNSW's recall
    with LmdbStore(tmp_path / "db") as store:
        incremental = IndexSet(store, ef_search=200)
        stored = []
        for _ in range(6):
            stored += _fill(store, rng, 50)
            incremental.catch_up()
        for r in stored[::9]:
            store.delete(r.id)
        direct = stored[-1]
        incremental.remove(direct.seq)  # a local delete applied directly, then seen again in the log
        store.delete(direct.id)
        incremental.catch_up()
        calls = []
        rebuilt = IndexSet(store, ef_search=200)
        rebuilt.rebuild(progress=lambda done, total: calls.append((done, total)))
        assert calls[0] == (0, store.count()) and calls[-1] == (store.count(), store.count())
        assert rebuilt.applied_seq == incremental.applied_seq == store.last_seq()
        assert rebuilt.sizes() == incremental.sizes() == {s: store.count() for s in INDEXED_SPACES}
        queries = [fingerprint(rng, tokens=1, e6_nnz=200, e13_nnz=200) for _ in range(8)]
        queries += list(store.fingerprints([stored[1].seq, stored[100].seq]))
        assert _answers(rebuilt, queries) == _answers(incremental, queries)


def test_save_load_then_catch_up(tmp_path):
    rng = np.random.default_rng(9)
    with LmdbStore(tmp_path / "db") as store:
        first = _fill(store, rng, 40)
        indexes = IndexSet(store)
        indexes.catch_up()
        indexes.save(tmp_path / "idx")
        indexes.save(tmp_path / "idx")  # replacing a saved set works too
        assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "idx"]  # no temp or old dirs left
        later = _fill(store, rng, 10)
        store.delete(first[0].id)
        loaded = IndexSet.load(tmp_path / "idx", store)
        assert loaded is not None and loaded.applied_seq == store.last_seq()
        assert loaded.sizes() == {s: 49 for s in INDEXED_SPACES}
        probe = store.fingerprints([later[-1].seq])[0]
        assert loaded.search(1, probe[1], 1)[0][0] == later[-1].seq
        assert first[0].seq not in {s for s, _ in loaded.search(13, probe[13], 100)}
    with LmdbStore(tmp_path / "other") as other:  # a different store: the saved set is not its cache
        assert IndexSet.load(tmp_path / "idx", other) is None
    assert IndexSet.load(tmp_path / "nothing-here") is None
    (tmp_path / "idx" / "e01.hnsw").write_bytes(b"garbage")
    assert IndexSet.load(tmp_path / "idx") is None


def test_open_rebuilds_when_nothing_is_saved(tmp_path):
    rng = np.random.default_rng(10)
    with LmdbStore(tmp_path / "db") as store:
        _fill(store, rng, 30)
        opened = IndexSet.open(tmp_path / "idx", store)
        assert opened.sizes()[1] == 30 and (tmp_path / "idx" / "manifest.json").exists()
        again = IndexSet.open(tmp_path / "idx", store)
        assert again.applied_seq == opened.applied_seq


def test_apply_ahead_is_not_applied_twice(tmp_path):
    rng = np.random.default_rng(11)
    with LmdbStore(tmp_path / "db") as store:
        indexes = IndexSet(store)
        _fill(store, rng, 5)
        fp = fingerprint(rng, tokens=2)
        mine = store.put(record(), fp)
        indexes.apply(mine.seq, fp)  # the writer's path: index right away
        assert len(indexes._indexes[6]) == 1 and indexes.applied_seq == 0  # (sizes() would catch up)
        indexes.catch_up()
        assert indexes.applied_seq == 6 and indexes.sizes() == {s: 6 for s in INDEXED_SPACES}
        assert indexes._indexes[13]._n_dead == 0  # the applied memory was skipped, not re-added


def test_an_apply_racing_a_catch_up_is_not_indexed_twice(tmp_path):
    """The background index insert (services.memory) can land while a catch-up is between reading the oplog and
    adding: the catch-up must not add that memory again (a sparse index would count its terms twice)."""
    rng = np.random.default_rng(12)
    with LmdbStore(tmp_path / "db") as store:
        indexes = IndexSet(store)
        fp = fingerprint(rng, tokens=2)
        mine = store.put(record(), fp)
        read = store.fingerprints

        def read_then_apply(seqs, spaces=None):
            out = read(seqs, spaces)
            indexes.apply(mine.seq, fp)  # lands after the catch-up chose its puts, before it adds them
            return out

        store.fingerprints = read_then_apply
        try:
            indexes.catch_up()
        finally:
            del store.fingerprints
        assert indexes.sizes() == {s: 1 for s in INDEXED_SPACES}
        assert indexes._indexes[13]._n_dead == 0
        indexes.apply(mine.seq, fp)  # and a late apply after the catch-up passed it is a no-op
        assert indexes.sizes() == {s: 1 for s in INDEXED_SPACES}


def test_dims_are_enforced(tmp_path):
    rng = np.random.default_rng(12)
    indexes = IndexSet(dims={1: DENSE_DIMS[1] * 2})
    with pytest.raises(DimensionMismatch):
        indexes.apply(1, fingerprint(rng, tokens=1))
    with pytest.raises(ValueError):
        indexes.search(12, np.zeros((1, 128), np.float32), 3)
    assert IndexSet().search(1, np.zeros(384, np.float32), 3) == []


def test_concurrent_saves_leave_one_valid_set(tmp_path):
    import threading

    rng = np.random.default_rng(13)
    with LmdbStore(tmp_path / "db") as store:
        _fill(store, rng, 20)
        a, b = IndexSet(store), IndexSet(store)
        a.catch_up()
        b.catch_up()
        errors: list[BaseException] = []

        def save_many(indexes):
            try:
                for _ in range(5):
                    indexes.save(tmp_path / "idx")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=save_many, args=(x,)) for x in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "idx"]
        loaded = IndexSet.load(tmp_path / "idx", store)
        assert loaded is not None and loaded.sizes() == {s: 20 for s in INDEXED_SPACES}


def test_searches_run_while_another_thread_writes_and_catches_up(tmp_path):
    import threading

    rng = np.random.default_rng(14)
    with LmdbStore(tmp_path / "db") as store:
        _fill(store, rng, 20)
        indexes = IndexSet(store)
        fps = [fingerprint(rng, tokens=2, e6_nnz=40, e13_nnz=15) for _ in range(150)]
        queries = [fingerprint(rng, tokens=1) for _ in range(4)]
        done = threading.Event()
        errors: list[BaseException] = []

        def search():
            try:
                while not done.is_set():
                    for q in queries:
                        for space in (1, 2, 6, 9, 13):
                            indexes.search(space, q[space], 10)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        searchers = [threading.Thread(target=search) for _ in range(2)]
        for t in searchers:
            t.start()
        for i, fp in enumerate(fps):
            stored = store.put(record(), fp)
            if i % 2:
                indexes.apply(stored.seq, fp)  # half indexed directly, half left to the searchers' catch-up
            if i % 10 == 0:
                store.delete(stored.id)
        done.set()
        for t in searchers:
            t.join()
        assert not errors
        indexes.catch_up()
        assert indexes.sizes() == {s: store.count() for s in INDEXED_SPACES}
        assert indexes.applied_seq == store.last_seq()


def test_apply_after_catch_up_passed_a_deleted_memory_does_not_resurrect_it(tmp_path):
    rng = np.random.default_rng(15)
    with LmdbStore(tmp_path / "db") as store:
        indexes = IndexSet(store)
        _fill(store, rng, 1)
        fp = fingerprint(rng, tokens=2)
        mine = store.put(record(), fp)
        store.delete(mine.id)  # say, another process, before our writer got to apply
        indexes.catch_up()
        indexes.apply(mine.seq, fp)
        assert indexes.sizes() == {s: 1 for s in INDEXED_SPACES}


def test_derived_spaces_answer_the_exact_nearest_from_their_pools(tmp_path):
    """E2-E4, E8 and E10 keep no vectors (issue 19.5): their k nearest come from a pool (timeline coordinates,
    E1's graph) re-scored with the space's measure (E8/E10 on the stored vectors, E2-E4 on the vectors their
    embedders make from the coordinates), and equal a brute-force search over the live store's stored vectors,
    saved and loaded or not.

    E1's graph is searched with ef 400 (>= the 342 live memories), so its pool is E1's exact top 64: this checks
    the pools and the re-scoring, not HNSW's recall. The fakes' E8 (E1 plus noise, on random vectors) ranks
    much less like E1 than a real E8 does: its true top 10 reach down to E1's rank 59 here, and a default graph
    search, whose build differs from run to run, once lost one of them (CI, stop 43)."""
    rng = np.random.default_rng(21)
    with LmdbStore(tmp_path / "db") as store:
        stored = _fill(store, rng, 400, tokens=1)
        for r in stored[::7]:
            store.delete(r.id)
        indexes = IndexSet(store, ef_search=400)
        indexes.catch_up()
        indexes.save(tmp_path / "idx")
        loaded = IndexSet.load(tmp_path / "idx", store, ef_search=400)
        assert loaded is not None
        assert {p.name for p in (tmp_path / "idx").glob("e0[2348]*")} == {
            "e02.timeline.npz", "e03.timeline.npz", "e04.timeline.npz", "e08.borrowed.npz"}
        live = [r.seq for r in stored if store.get_by_seq([r.seq])[0] is not None]
        fps = dict(zip(live, store.fingerprints(live)))
        for space in (2, 3, 4, 8, 10):
            matrix = np.stack([fps[s][space] for s in live]).astype(np.float64)
            for probe in rng.choice(live, 12, replace=False).tolist():
                q = fps[probe][space].astype(np.float64)
                exact = matrix @ q
                if space != 2:
                    exact /= np.linalg.norm(matrix, axis=1) * np.linalg.norm(q)
                want = [live[i] for i in np.argsort(-exact, kind="stable")[:10]]
                for ix in (indexes, loaded):
                    got = ix.search(space, fps[probe][space], 10)
                    assert [s for s, _ in got] == want, space
                    assert [sc for _, sc in got] == pytest.approx(sorted(exact, reverse=True)[:10], abs=1e-5)


def test_nearest_many_differs_from_search_many_only_in_the_timeline_spaces(tmp_path):
    """The UTL's neighbourhood (nearest_many): every space answers as search_many does, but E2-E4, which rank by
    the timeline's closeness (TimelineIndex.nearest) instead of re-scoring a larger pool on their vectors."""
    rng = np.random.default_rng(12)
    with LmdbStore(tmp_path / "db") as store:
        _fill(store, rng, 120)
        indexes = IndexSet(store, ef_search=200)
        query = store.fingerprints([7])[0]
        assert query is not None
        queries = {space: query[space] for space in INDEXED_SPACES}
        exact, near = indexes.search_many(queries, 10, 0.5), indexes.nearest_many(queries, 10, 0.5)
        timeline = {2, 3, 4}
        assert {s: exact[s] for s in exact if s not in timeline} == {s: near[s] for s in near if s not in timeline}
        for space in timeline:
            assert near[space] == indexes._indexes[space].nearest(query[space], 10)
            assert len(near[space]) == 10 and near[space][0][0] == 7  # itself first: no gap on any axis


@pytest.mark.parametrize("max_df", [1.0, 0.3])
def test_one_search_gives_both_leave_one_out_neighbourhoods(tmp_path, max_df):
    """index_neighbours_twice (the refit's two leave-one-out passes from one search) equals two index_neighbours
    calls: without the memory itself, and without its whole topic; E6/E13 fall back to all their terms exactly
    where one call would (max_df 0.3 on this store trims most terms). E8/E10 re-score one larger pool for both
    passes (it may hold nearer memories for the first; on this store it does not)."""
    from contextgraph.services.engine.delta_sc_neighbours import index_neighbours, index_neighbours_twice

    rng = np.random.default_rng(13)
    with LmdbStore(tmp_path / "db") as store:
        seqs = [r.seq for r in _fill(store, rng, 150)]
        indexes = IndexSet(store, ef_search=400)  # HNSW exact on 150 memories: a difference is the logic's
        for own in seqs[::37]:
            fp = store.fingerprints([own])[0]
            topic = frozenset(rng.choice(seqs, 25, replace=False).tolist()) | {own}
            both, off = index_neighbours_twice(store, indexes, fp, own, topic, 16, max_df, cache={})
            assert off is not None
            for twice, once in ((both, index_neighbours(store, indexes, fp, frozenset({own}), 16, max_df)),
                                (off, index_neighbours(store, indexes, fp, topic, 16, max_df))):
                assert twice[0] == once[0] and set(twice[1]) == set(once[1])  # the ranks; the fingerprints read
            alone, none = index_neighbours_twice(store, indexes, fp, own, None, 16, max_df)
            assert none is None and alone[0] == both[0]
