"""E8 refreshed when edges change (issue 11.7): services.e8_refresh over a real LMDB store and its indexes.

Fingerprints are the seeded fakes with E8 set as the store would make it with no neighbour (E1 normalised), so a
change of E8 can only come from the refresh. The crash test kills a child process with SIGKILL inside the
rewrite's transaction, between two memories of one batch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from storage_fakes import fingerprint, record

from contextgraph.embedders.e08_graph import mix
from contextgraph.services.runtime.e8_refresh import E8Refresher, EdgeWatch
from contextgraph.storage.base import Edge
from contextgraph.storage.indexes import IndexSet
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.writer import Writer

HERE = str(Path(__file__).parent)
SETTINGS = {"batch": 2, "max_pending": 3, "edge_types": ["Semantic", "Causal", "Hierarchical", "Relational"]}


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _put(store: LmdbStore, rng: np.random.Generator, session: str = "s"):
    fp = fingerprint(rng, tokens=8)
    fp[8] = mix(fp[1], [])
    return store.put(record(session=session), fp), fp


@pytest.fixture
def store(tmp_path):
    opened = LmdbStore(tmp_path / "store")
    yield opened
    opened.close()


def test_linking_two_memories_moves_their_e8_together_and_reindexes_it(store):
    rng = np.random.default_rng(3)
    (a, fa), (b, fb), (c, _) = _put(store, rng), _put(store, rng), _put(store, rng)
    indexes = IndexSet(store)
    indexes.catch_up()
    before = _cos(fa[8], fb[8])
    refresher = E8Refresher(SETTINGS)
    assert refresher.refresh_now(store, [a.id, b.id, c.id]) == []  # no edge yet: E8 is E1 already, no write
    store.graph_write(lambda g: g.put_edge(Edge(a.id, b.id, "Relational", weight=1.0, direction="undirected")))
    assert sorted(refresher.refresh_now(store, [a.id, b.id, c.id])) == sorted([a.id, b.id])  # c has no edge
    na, nb = (fp[8] for fp in store.fingerprints([a.seq, b.seq]))  # type: ignore[index]
    np.testing.assert_allclose(na, mix(fa[1], [(1.0, fb[1])]), atol=1e-6)
    assert _cos(na, nb) > before + 0.3, (before, _cos(na, nb))
    np.testing.assert_array_equal(store.fingerprints([a.seq])[0][1], fa[1])  # type: ignore[index]
    # the rewrite entries make the E8 index re-index a and b: both now sit at a's new E8 (two memories linked
    # only to each other mix to the same vector), the unlinked c does not
    indexes.catch_up()
    top = indexes.search(8, na, 2)
    assert {seq for seq, _ in top} == {a.seq, b.seq} and all(s == pytest.approx(1.0, abs=1e-4) for _, s in top)
    assert indexes.sizes()[8] == 3 and store.check() == []
    # a Temporal edge says nothing about content: it does not count
    store.graph_write(lambda g: g.put_edge(Edge(c.id, a.id, "Temporal", weight=0.5)))
    assert refresher.refresh_now(store, [c.id]) == []


def test_curation_edges_are_watched_and_a_forgotten_neighbour_leaves_e8(store):
    rng = np.random.default_rng(4)
    (a, fa), (b, _) = _put(store, rng), _put(store, rng)

    def link(g):
        watched = EdgeWatch(g)
        watched.put_edge(Edge(a.id, b.id, "Semantic", weight=0.8, direction="undirected"))
        return watched.touched

    assert list(store.graph_write(link)) == [a.id, b.id]
    refresher = E8Refresher(SETTINGS)
    refresher.refresh_now(store, [a.id, b.id])

    def forget(g):
        watched = EdgeWatch(g)
        watched.delete_memory(b.id)
        return watched.touched

    assert set(store.graph_write(forget)) == {a.id, b.id}
    assert refresher.refresh_now(store, [a.id, b.id]) == [a.id]  # b is gone; a is back to its own E1
    np.testing.assert_allclose(store.fingerprints([a.seq])[0][8], mix(fa[1], []), atol=1e-6)  # type: ignore[index]


def test_the_queue_is_bounded_and_drains_in_batches_on_the_writer(store):
    rng = np.random.default_rng(5)
    memories = [_put(store, rng)[0] for _ in range(5)]
    store.graph_write(lambda g: [g.put_edge(Edge(memories[i].id, memories[i + 1].id, "Semantic", weight=0.9))
                                 for i in range(4)])
    refresher = E8Refresher(SETTINGS)
    with Writer() as writer:
        block = writer.submit_future(lambda: None)  # a drain waits behind whatever the writer has queued
        refresher.enqueue(store, writer, [m.id for m in memories])
        assert refresher.pending <= SETTINGS["max_pending"] and refresher.dropped == 2  # the two oldest
        block.result()
        for _ in range(10):  # each batch puts the next behind a no-op like this one
            writer.submit_future(lambda: None).result()
            if not refresher.pending:
                break
    assert refresher.pending == 0 and refresher.refreshed == 3
    kept = {m.id for m in memories[2:]}
    changed = {m.id for m, fp in zip(memories, store.fingerprints([m.seq for m in memories]))
               if not np.allclose(fp[8], mix(fp[1], []))}  # type: ignore[index]
    assert changed == kept


CRASH = """
import os, signal, sys
sys.path.insert(0, sys.argv[1])
from contextgraph.storage import lmdb_graph
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.services.runtime.e8_refresh import E8Refresher
store = LmdbStore(sys.argv[2])
encode, calls = lmdb_graph.encode_fingerprint, []
def dying(fp):  # the second memory of the batch: the first one's new E8 is already written in the transaction
    calls.append(1)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return encode(fp)
lmdb_graph.encode_fingerprint = dying
E8Refresher({"batch": 16, "max_pending": 64, "edge_types": ["Semantic"]}).refresh_now(store, sys.argv[3:])
print("survived", flush=True)
"""


def test_a_crash_mid_refresh_leaves_the_old_fingerprints(tmp_path):
    rng = np.random.default_rng(6)
    path = tmp_path / "store"
    store = LmdbStore(path)
    (a, fa), (b, fb) = _put(store, rng), _put(store, rng)
    store.graph_write(lambda g: g.put_edge(Edge(a.id, b.id, "Semantic", weight=0.9, direction="undirected")))
    last = store.last_seq()
    store.close()
    child = subprocess.run([sys.executable, "-c", CRASH, HERE, str(path), a.id, b.id], capture_output=True,
                           text=True, timeout=120)
    assert child.returncode == -9 and "survived" not in child.stdout, child.stderr
    store = LmdbStore(path)
    try:
        fps = store.fingerprints([a.seq, b.seq])
        np.testing.assert_array_equal(fps[0][8], fa[8])  # type: ignore[index]
        np.testing.assert_array_equal(fps[1][8], fb[8])  # type: ignore[index]
        assert store.last_seq() == last and store.check() == []
        assert sorted(E8Refresher(SETTINGS).refresh_now(store, [a.id, b.id])) == sorted([a.id, b.id])
    finally:
        store.close()
