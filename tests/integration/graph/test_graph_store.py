"""The graph tables on real LMDB: edges by source and target, Temporal edges in the put's transaction, one
transaction per curation operation (a failure mid-way leaves the before state), and automatic Semantic edges."""

import sys
from pathlib import Path

import numpy as np
import pytest

from contextgraph.storage.base import Edge
from contextgraph.storage.indexes import IndexSet
from contextgraph.storage.lmdb_store import LmdbStore

sys.path.insert(0, str(Path(__file__).parents[1] / "storage"))
from storage_fakes import fingerprint, record


@pytest.fixture
def store(tmp_path):
    with LmdbStore(tmp_path / "db") as s:
        yield s


def temporal(prev, new):
    return Edge(prev, new, "Temporal", weight=0.5)


def test_edges_indexed_both_ways_and_temporal_in_put(store):
    rng = np.random.default_rng(1)
    a = store.put(record(), fingerprint(rng), temporal=temporal)
    b = store.put(record(), fingerprint(rng), temporal=temporal)
    c = store.put(record(session="s2"), fingerprint(rng), temporal=temporal)  # another session: no Temporal edge
    store.graph_write(lambda g: g.put_edge(Edge(c.id, a.id, "Causal", weight=0.7)))
    edges = store.graph_read(lambda g: (g.edges_out(a.id), g.edges_in(a.id), g.edges(a.id)))
    assert [(e.source, e.target, e.type) for e in edges[0]] == [(a.id, b.id, "Temporal")]
    assert [(e.source, e.target, e.type) for e in edges[1]] == [(c.id, a.id, "Causal")]
    assert len(edges[2]) == 2
    assert store.graph_read(lambda g: g.lineage(a.id))[0]["event"] == "created"


def test_a_failing_operation_leaves_the_before_state(store, tmp_path):
    rng = np.random.default_rng(2)
    a = store.put(record(), fingerprint(rng), temporal=temporal)
    b = store.put(record(), fingerprint(rng), temporal=temporal)
    before = store.graph_read(lambda g: (g.get(a.id), g.edges(a.id), g.lineage(a.id)))

    def half_then_crash(g):
        g.delete_memory(a.id)
        g.put_tombstone(a.id, {"reversal_hash": "h", "deleted_at": 0}, b"")
        raise RuntimeError("crash between the steps")

    with pytest.raises(RuntimeError):
        store.graph_write(half_then_crash)
    after = store.graph_read(lambda g: (g.get(a.id), g.edges(a.id), g.lineage(a.id), g.get_tombstone(a.id)))
    assert after[:3] == before and after[3] is None
    assert store.check() == [] and store.get(b.id) is not None


def test_delete_and_restore_are_seen_by_the_indexes(store, tmp_path):
    rng = np.random.default_rng(3)
    fp = fingerprint(rng)
    a = store.put(record(), fp)
    indexes = IndexSet.open(tmp_path / "idx", store)
    assert indexes.search(1, fp[1], 1)[0][0] == a.seq
    rec, blob, _edges = store.graph_write(lambda g: g.delete_memory(a.id))
    indexes.catch_up(store)
    assert indexes.search(1, fp[1], 1) == []
    restored = store.graph_write(lambda g: g.restore_memory(rec, blob))
    indexes.catch_up(store)
    assert indexes.search(1, fp[1], 1)[0][0] == restored.seq
    assert store.graph_read(lambda g: g.fingerprint_blob(restored.seq)) == blob
    assert store.check() == []


@pytest.mark.anyio
async def test_store_creates_semantic_edges_to_near_memories(app):
    async def call(name, args):
        return (await app.dispatcher.call(name, args, app.tool_context("s"))).payload

    why = "for the semantic edge test"
    a = (await call("store_memory", {"content": "The deploy failed because the migration timed out.",
                                     "rationale": why}))["id"]
    b = (await call("store_memory", {"content": "The deploy failed since the migration hit a timeout.",
                                     "rationale": why}))["id"]
    hood = await call("get_neighborhood", {"node_id": b, "edge_types": ["Semantic"], "min_weight": 0})
    assert [n["id"] for n in hood["neighbors"]] == [a]
    assert hood["neighbors"][0]["weight"] >= 0.6 and hood["neighbors"][0]["direction"] == "undirected"
