"""The storage contract: what every backend of storage.base.MemoryStore must do, whatever it runs on. Each test is
parametrised over the backends (ids end in [lmdb] and [postgres]: the PostgreSQL backend passes the same suite
against a real server). Only the protocol's methods are used here, never a backend's own."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from contextgraph.errors import DimensionMismatch, InvalidFingerprint, StorageError
from contextgraph.storage.base import Edge, GraphTxn, MemoryStore, OplogEntry
from contextgraph.storage.codec import encode_fingerprint
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.postgres.store import PgStore

sys.path.insert(0, str(Path(__file__).parents[1] / "integration" / "storage"))
from storage_fakes import fingerprint, record, same_fingerprint

# backend name → opens a fresh, empty store under a directory it may use (postgres: in a new database on the
# session's embedded server, tests/conftest.py)
BACKENDS: dict[str, Callable[[Path, pytest.FixtureRequest], MemoryStore]] = {
    "lmdb": lambda directory, request: LmdbStore(directory / "store"),
    "postgres": lambda directory, request: PgStore(request.getfixturevalue("postgres_url")),
}


@pytest.fixture(params=sorted(BACKENDS))
def store(request, tmp_path) -> Iterator[MemoryStore]:
    opened = BACKENDS[request.param](tmp_path, request)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(11)


@dataclasses.dataclass(frozen=True)
class Triple:  # storage.base.NewTriple
    head: str
    relation: str
    tail: str
    head_vector: np.ndarray
    tail_vector: np.ndarray


def put(store: MemoryStore, rng: np.random.Generator, **kw):
    fp = fingerprint(rng)
    return store.put(record(**kw), fp), fp


def test_put_get_and_sequence(store, rng):
    assert store.count() == 0 and store.last_seq() == 0
    a, fp_a = put(store, rng, session="s1", content="first")
    b, _ = put(store, rng, session="s1", content="second")
    c, _ = put(store, rng, session="s2", content="third")
    assert (a.seq, b.seq, c.seq) == (1, 2, 3)
    assert (a.session_position, b.session_position, c.session_position) == (0, 1, 0)
    assert store.session_count("s1") == 2 and store.session_count("s2") == 1 and store.session_count("x") == 0
    assert store.count() == 3 and store.last_seq() == 3
    assert store.get(a.id) == a and store.get("0" * 32) is None
    assert store.get_by_seq([c.seq, 99, a.seq]) == [c, None, a]
    assert [e.op for e in store.oplog_since(0)] == ["put", "put", "put"]
    assert store.oplog_since(1, limit=1) == [OplogEntry(2, "put", b.id, 2)]
    assert same_fingerprint(fp_a, store.fingerprints([a.seq])[0])


def test_fingerprints_select_spaces(store, rng):
    a, fp = put(store, rng)
    (only,) = store.fingerprints([a.seq], spaces=[1, 6, 12])
    assert set(only) == {1, 6, 12}
    assert np.array_equal(only[1], fp[1])
    assert store.fingerprints([404]) == [None]


def test_fingerprint_columns_equal_the_fingerprints(store, rng):
    """Stage 3's read: one column per space, the memories not found left out, the rest in the order asked."""
    puts = [put(store, rng) for _ in range(4)]
    store.delete(puts[2][0].id)
    asked = [puts[3][0].seq, 404, puts[0][0].seq, puts[2][0].seq, puts[1][0].seq]
    columns = store.fingerprint_columns(asked, [1, 6, 9, 12, 13])
    assert columns.seqs == [puts[3][0].seq, puts[0][0].seq, puts[1][0].seq]
    assert set(columns.columns) == {1, 6, 9, 12, 13}
    for row, seq in enumerate(columns.seqs):
        (expected,) = store.fingerprints([seq], spaces=[1, 6, 9, 12, 13])
        assert same_fingerprint(expected, columns.fingerprint(row))
    assert columns[1].shape == (3, len(puts[0][1][1])) and columns[1].dtype == np.float32
    assert store.fingerprint_columns([404], [1]).seqs == []


def test_a_failed_put_writes_nothing(store, rng):
    a, _ = put(store, rng)
    incomplete = fingerprint(rng)
    del incomplete[7]
    with pytest.raises(InvalidFingerprint):
        store.put(record(), incomplete)
    with pytest.raises(StorageError):
        store.put(a, fingerprint(rng))  # the same id again
    assert store.count() == 1 and store.last_seq() == 1 and store.check() == []


def test_put_commits_its_edges_temporal_edge_triples_and_lineage(store, rng):
    a, _ = put(store, rng, session="s")
    b = store.put(record(session="s"), fingerprint(rng),
                  edges=[Edge("x", a.id, "Semantic", weight=0.9, direction="undirected"),
                         Edge("x", "f" * 32, "Relational")],  # to a memory that does not exist: dropped
                  temporal=lambda previous, new: Edge(previous, new, "Temporal", weight=0.5),
                  triples=[Triple("alice", "likes", "tea", np.ones(4, np.float32), np.zeros(4, np.float32))])
    edges = store.graph_read(lambda g: g.edges(b.id))
    assert {(e.source, e.target, e.type) for e in edges} == {(a.id, b.id, "Temporal")}
    assert store.triple_count() == 1
    assert [t[:3] for t in store.triples_of(b.id)] == [("alice", "likes", "tea")]
    assert [t[:4] for t in store.live_triples()] == [(b.id, "alice", "likes", "tea")]
    assert [e["event"] for e in store.graph_read(lambda g: g.lineage(b.id))] == ["created"]


def test_update_touch_delete(store, rng):
    a, _ = put(store, rng)
    b, _ = put(store, rng)
    updated = store.update(dataclasses.replace(a, importance=0.9, tags=("x",)))
    assert updated.seq == a.seq and store.get(a.id).importance == 0.9
    store.touch([a.seq, a.seq, b.seq], now=123.0)
    assert store.get(a.id).access_count == 2 and store.get(a.id).last_accessed == 123.0
    assert store.delete(b.id) is True and store.delete(b.id) is False
    assert store.get(b.id) is None and store.count() == 1
    assert store.oplog_since(2)[-1] == OplogEntry(3, "delete", b.id, b.seq)  # updates take no seq
    with pytest.raises(StorageError):
        store.update(b)  # gone
    assert store.check() == []


def test_scan_is_every_live_memory_in_seq_order(store, rng):
    made = [put(store, rng)[0] for _ in range(5)]
    store.delete(made[2].id)
    scanned = list(store.scan(spaces=[1]))
    assert [r.id for r, _ in scanned] == [r.id for i, r in enumerate(made) if i != 2]
    assert all(set(fp) == {1} for _, fp in scanned)


def test_documents(store):
    assert store.get_document("engine") is None
    store.put_document("engine", {"k": 1.5, "xs": [1, 2]})
    assert store.get_document("engine") == {"k": 1.5, "xs": [1, 2]}


def test_graph_transaction_edges_tombstones_reversals(store, rng):
    a, _ = put(store, rng)
    b, _ = put(store, rng)

    def write(g: GraphTxn) -> None:
        g.put_edge(Edge(a.id, b.id, "Causal", weight=0.7))
        g.put_tombstone("t" * 32, {"reason": "test"}, b"blob")
        g.put_reversal("h1", {"op": "forget"})
        g.append_lineage(a.id, {"event": "annotated"})

    store.graph_write(write)

    def read(g: GraphTxn):
        return (g.edges_out(a.id), g.edges_in(b.id), g.get_edge(a.id, b.id, "Causal"), g.edge_count(),
                g.get_tombstone("t" * 32), list(g.tombstones()), g.get_reversal("h1"),
                [e["event"] for e in g.lineage(a.id)], g.ids_with_prefix(a.id[:6]),
                [r.id for r in g.recent(10, None, None)])

    out, into, edge, count, tomb, tombs, rev, lineage, prefixed, recent = store.graph_read(read)
    assert out == into == [edge] and edge.weight == 0.7 and count == 1
    assert tomb == ({"reason": "test"}, b"blob") and [t for t, _ in tombs] == ["t" * 32]
    assert rev == {"op": "forget"} and lineage == ["created", "annotated"]
    assert a.id in prefixed and recent == [b.id, a.id]


def test_delete_and_restore_memory_in_one_transaction(store, rng):
    a, fp = put(store, rng)
    b, _ = put(store, rng)
    store.graph_write(lambda g: g.put_edge(Edge(a.id, b.id, "Relational")))
    removed, blob, edges = store.graph_write(lambda g: g.delete_memory(a.id))
    assert removed == a and len(edges) == 1 and blob == encode_fingerprint(fp)
    assert store.get(a.id) is None and store.graph_read(lambda g: g.edges(b.id)) == []
    restored = store.graph_write(lambda g: g.restore_memory(removed, blob))
    assert restored.id == a.id and restored.seq > b.seq  # a seq is never reused
    assert same_fingerprint(fp, store.fingerprints([restored.seq])[0])
    assert [e.op for e in store.oplog_since(0)] == ["put", "put", "delete", "put"]
    assert store.check() == []


def test_a_failure_midway_leaves_the_before_state(store, rng):
    a, _ = put(store, rng)
    b, _ = put(store, rng)
    before = (store.count(), store.last_seq(), store.graph_read(lambda g: g.edge_count()), store.get(a.id))

    def half_done(g: GraphTxn) -> None:
        g.put_edge(Edge(a.id, b.id, "Semantic"))
        g.delete_memory(b.id)
        g.update(dataclasses.replace(a, importance=1.0))
        raise RuntimeError("the operation fails after three changes")

    with pytest.raises(RuntimeError):
        store.graph_write(half_done)
    after = (store.count(), store.last_seq(), store.graph_read(lambda g: g.edge_count()), store.get(a.id))
    assert after == before and store.get(b.id) == b and store.check() == []


def test_rewrite_spaces_replaces_only_those_spaces_in_one_transaction(store, rng):
    """E8's refresh rewrites one space of stored fingerprints: the others, the record and the seq stay; the oplog
    names the memory and the space so every process's indexes re-index it; a bad vector anywhere in the batch
    changes nothing (the refresh never leaves half a batch, or a torn fingerprint, behind)."""
    a, fp_a = put(store, rng)
    b, fp_b = put(store, rng)
    new8 = rng.standard_normal(fp_a[8].shape).astype(np.float32)
    assert store.rewrite_spaces({a.id: {8: new8}, "0" * 32: {8: new8}}) == [a.id]  # a missing id is skipped
    got = store.fingerprints([a.seq])[0]
    assert got is not None and np.array_equal(got[8], new8)
    assert same_fingerprint({**fp_a, 8: new8}, got)
    assert store.get(a.id) == a and store.count() == 2
    entry = store.oplog_since(b.seq)[-1]
    assert (entry.op, entry.memory_id, entry.memory_seq, entry.spaces) == ("rewrite", a.id, a.seq, (8,))

    before = (store.last_seq(), store.fingerprints([a.seq, b.seq]))
    with pytest.raises(DimensionMismatch):  # b's vector has the wrong size: a's good one must not land either
        store.rewrite_spaces({a.id: {8: np.zeros_like(new8)}, b.id: {8: np.zeros(3, dtype=np.float32)}})
    after = (store.last_seq(), store.fingerprints([a.seq, b.seq]))
    assert after[0] == before[0]
    assert all(same_fingerprint(x, y, multivector_f16=False) for x, y in zip(before[1], after[1]))  # type: ignore[arg-type]
    assert same_fingerprint(fp_b, after[1][1]) and store.check() == []


def test_the_first_memory_may_come_through_a_graph_transaction(store, rng):
    """A bulk import restores memories into an empty store: every table a memory needs is made on the way."""
    fp = fingerprint(rng)
    restored = store.graph_write(lambda g: g.restore_memory(record(), encode_fingerprint(fp)))
    assert restored.seq == 1 and store.count() == 1 and store.check() == []
    assert same_fingerprint(fp, store.fingerprints([restored.seq])[0])


def test_recent_since_skips_a_restored_old_memory_instead_of_stopping_at_it(store, rng):
    """Seq order is not creation order: a restore (or an imported line) keeps its old created_at under a new seq.
    `recent(since=…)` must still find the newer memories stored before it."""
    for i in range(3):
        store.put(dataclasses.replace(record(content=f"today {i}"), created_at=2_000_000_000.0 + i), fingerprint(rng))
    old = record(content="from 2023")  # created_at 1_700_000_000
    store.graph_write(lambda g: g.restore_memory(old, encode_fingerprint(fingerprint(rng))))
    found = store.graph_read(lambda g: g.recent(10, 1_900_000_000.0, None))
    assert [r.content for r in found] == ["today 2", "today 1", "today 0"]
    assert store.graph_read(lambda g: g.recent(1, None, None))[0].content == "from 2023"  # newest stored
