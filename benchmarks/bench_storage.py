"""Storage measurements, printed: `.venv/bin/python -m pytest -m slow -s benchmarks/bench_storage.py`.
Never pass/fail on a number: the machine is shared and noisy. Outside tests/, so never part of the default run."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "integration" / "storage"))
from storage_fakes import fingerprint, record

from contextgraph.fingerprint import Sparse
from contextgraph.storage.binary_index import BinaryIndex
from contextgraph.storage.codec import encode_fingerprint
from contextgraph.storage.hnsw_index import DenseIndex
from contextgraph.storage.indexes import INDEXED_SPACES, IndexSet
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.sparse_index import SparseIndex

pytestmark = pytest.mark.slow
N = 100_000


def _time(fn, repeat: int) -> str:
    fn()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    p50, p95 = np.percentile(samples, [50, 95]) * 1000
    return f"{p50:.3f}/{p95:.3f} ms"


def _zipf_docs(rng, n_docs: int, vocab: int, nnz: int, s: float = 1.0) -> tuple[list[Sparse], np.ndarray]:
    """Documents whose terms follow a Zipf law over `vocab` (common terms in most documents, like real text)."""
    p = 1.0 / np.arange(10, vocab + 10) ** s
    p /= p.sum()
    perm = rng.permutation(vocab)  # frequent terms are not the low ids
    draws = perm[rng.choice(vocab, size=(n_docs, int(nnz * 1.5)), p=p)]
    docs = []
    for row in draws:
        terms = np.unique(row)[:nnz].astype(np.int32)
        docs.append(Sparse(terms, np.log1p(rng.integers(1, 4, len(terms))).astype(np.float32)))
    return docs, p[np.argsort(perm)]


def test_store_latencies(tmp_path):
    rng = np.random.default_rng(0)
    fps = [fingerprint(rng, tokens=80) for _ in range(300)]
    print(f"\nfingerprint blob: {len(encode_fingerprint(fps[0])) / 1024:.1f} KB (E12 80 tokens × 128 f16 = 20 KB)")
    with LmdbStore(tmp_path / "db") as store:
        it = iter(fps)
        print("put (synced, one memory):", _time(lambda: store.put(record(), next(it)), 299))
        seqs = rng.choice(np.arange(1, 301), 200, replace=False).tolist()
        ids = [r.id for r in store.get_by_seq(seqs)]
        print("get ×200 by id:", _time(lambda: [store.get(i) for i in ids], 50))
        print("get_by_seq 200:", _time(lambda: store.get_by_seq(seqs), 50))
        print("fingerprints 200, all spaces:", _time(lambda: store.fingerprints(seqs), 50))
        print("fingerprints 200, E12 only:", _time(lambda: store.fingerprints(seqs, spaces=[12]), 50))
        print("fingerprints 200, indexed spaces:", _time(lambda: store.fingerprints(seqs, spaces=INDEXED_SPACES), 50))
        print("last_seq (catch-up fast path):", _time(store.last_seq, 200))
        seqs10 = seqs[:10]
        print("touch 10:", _time(lambda: store.touch(seqs10), 50))


def test_sparse_search_at_100k():
    rng = np.random.default_rng(1)
    for name, vocab, nnz in (("E13", 30522, 60), ("E6", 32768, 200)):
        docs, p = _zipf_docs(rng, N, vocab, nnz)
        index = SparseIndex()
        t = time.perf_counter()
        for a in range(0, N, 5000):
            index.add(list(range(a + 1, a + 5001)), docs[a : a + 5000])
        build = time.perf_counter() - t
        postings = sum(index._used)
        qs = []
        for _ in range(50):
            terms = np.unique(rng.choice(vocab, 15, p=p)).astype(np.int32)
            qs.append(Sparse(terms, np.log1p(np.ones(len(terms))).astype(np.float32)))
        it = iter(qs * 3)
        print(f"\n{name} sparse, {N} docs × {nnz} terms ({postings / 1e6:.1f}M postings, build {build:.1f} s): "
              f"search k=100 (15-term Zipf queries): {_time(lambda: index.search(next(it), 100), 100)}")
        one = iter(range(N + 1, N + 1000))
        extra = iter(docs[:1000])
        print(f"{name} add one document: {_time(lambda: index.add([next(one)], [next(extra)]), 200)}")
        cands = docs[:200]
        print(f"{name} score 200 candidates: {_time(lambda: index.score(qs[0], cands), 50)}")


def test_binary_search_at_100k():
    rng = np.random.default_rng(2)
    index = BinaryIndex(1024)
    index.add(range(1, N + 1), rng.integers(0, 256, (N, 128), dtype=np.uint8))
    q = rng.integers(0, 256, 128, dtype=np.uint8)
    print(f"\nE9 binary 100K × 1024 bits, search k=100: {_time(lambda: index.search(q, 100), 50)}")


def test_dense_search_at_100k():
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((500, 384))
    data = (centers[rng.integers(0, 500, N)] + 0.7 * rng.standard_normal((N, 384))).astype(np.float32)
    index = DenseIndex(384, "cosine", capacity=N)
    t = time.perf_counter()
    index.add(range(1, N + 1), data)
    build = time.perf_counter() - t
    queries = (centers[rng.integers(0, 500, 200)] + 0.7 * rng.standard_normal((200, 384))).astype(np.float32)
    it = iter(np.concatenate([queries] * 2))
    print(f"\nE1 dense 100K × 384 clustered (build {build:.1f} s, 2 threads): "
          f"search k=10 ef=64: {_time(lambda: index.search(next(it), 10), 300)}")
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    recall = []
    for q in queries[:50]:
        truth = set((np.argsort(-(unit @ q))[:10] + 1).tolist())
        recall.append(len(truth & {s for s, _ in index.search(q, 10)}) / 10)
    print(f"E1 recall@10 at ef=64: {np.mean(recall):.3f}")
    extra = iter(rng.standard_normal((300, 384)).astype(np.float32))
    labels = iter(range(N + 1, N + 400))
    print(f"E1 add one: {_time(lambda: index.add([next(labels)], next(extra)[None]), 200)}")

    # searches from two threads: does the read side of the lock let them overlap?
    from contextgraph.storage.locks import RWLock

    def run(lock_ctx, threads=2, per=300):
        def work():
            for q in queries[:per]:
                with lock_ctx():
                    index.search(q, 10)
        ts = [threading.Thread(target=work) for _ in range(threads)]
        t = time.perf_counter()
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        return (time.perf_counter() - t) / (threads * per) * 1000

    rw = RWLock()
    plain = threading.Lock()
    print(f"E1 search, 2 threads: RWLock read side {run(rw.read):.3f} ms/search, "
          f"one Lock {run(lambda: plain):.3f} ms/search, 1 thread {run(rw.read, threads=1):.3f} ms/search")


def test_catch_up_cost(tmp_path):
    rng = np.random.default_rng(4)
    with LmdbStore(tmp_path / "db", sync=False) as store:  # unsynced: this measures the index side
        indexes = IndexSet(store)
        for _ in range(200):
            store.put(record(), fingerprint(rng, tokens=40))
        indexes.catch_up()
        for _ in range(1000):
            store.put(record(), fingerprint(rng, tokens=40))
        t = time.perf_counter()
        indexes.catch_up()
        batch = (time.perf_counter() - t) * 1000
        print(f"\ncatch_up of 1000 memories (13 spaces, 12 indexes): {batch / 1000:.3f} ms per memory")
        one = []
        for _ in range(100):
            store.put(record(), fingerprint(rng, tokens=40))
            t = time.perf_counter()
            indexes.catch_up()
            one.append(time.perf_counter() - t)
        p50, p95 = np.percentile(one, [50, 95]) * 1000
        print(f"catch_up of one new memory: {p50:.3f}/{p95:.3f} ms; nothing new: {_time(indexes.catch_up, 200)}")
        fp = fingerprint(rng, tokens=40)
        seq = store.put(record(), fp).seq
        t = time.perf_counter()
        indexes.apply(seq, fp)
        print(f"apply one memory directly: {(time.perf_counter() - t) * 1000:.3f} ms")
        t = time.perf_counter()
        indexes.rebuild()
        per = (time.perf_counter() - t) / store.count() * 1000
        print(f"rebuild of {store.count()} memories: {per:.3f} ms per memory")
        t = time.perf_counter()
        indexes.save(tmp_path / "idx")
        saved = time.perf_counter() - t
        t = time.perf_counter()
        IndexSet.load(tmp_path / "idx", store)
        print(f"save {saved * 1000:.0f} ms, load {(time.perf_counter() - t) * 1000:.0f} ms at {store.count()} memories")
