"""`contextgraph migrate` (storage/postgres/migrate.py): an LMDB store with a real history (puts, deletes, a
rewrite, edges, a tombstone and its reversal record, lineage, triples, sessions, engine documents) copies into
PostgreSQL so that every protocol read answers the same; a copy interrupted midway refuses to be served and
resumes to the same result; a non-empty database is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from storage_fakes import fingerprint, record, same_fingerprint

from contextgraph.errors import StorageError
from contextgraph.storage.base import Edge
from contextgraph.storage.codec import encode_fingerprint
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.postgres.migrate import migrate_lmdb_to_postgres
from contextgraph.storage.postgres.schema import HNSW_SPACES, index_names
from contextgraph.storage.postgres.search import PgIndexes
from contextgraph.storage.postgres.store import PgStore


@dataclasses.dataclass(frozen=True)
class Triple:
    head: str
    relation: str
    tail: str
    head_vector: np.ndarray
    tail_vector: np.ndarray


def _history(home) -> list[str]:
    """A store that has lived: returns every id it ever held."""
    rng = np.random.default_rng(3)
    with LmdbStore(home / "store") as lm:
        made = []
        for i in range(23):
            fp = fingerprint(rng, tokens=3)
            triples = [Triple(f"h{i}", "likes", "tea", np.ones(4, np.float32), np.zeros(4, np.float32))] if i % 5 == 0 \
                else []
            made.append(lm.put(record(session=f"s{i % 3}", content=f"memory {i}"), fp,
                               edges=[Edge("x", made[-1].id, "Semantic", weight=0.4)] if made else (),
                               temporal=lambda prev, new: Edge(prev, new, "Temporal"), triples=triples))
        lm.delete(made[4].id)
        lm.rewrite_spaces({made[6].id: {8: rng.standard_normal(384).astype(np.float32)}})

        def forget(g):
            _removed, blob, edges = g.delete_memory(made[9].id)
            g.put_tombstone(made[9].id, {"reason": "test", "edges": len(edges)}, blob)
            g.put_reversal("rev-1", {"op": "forget", "id": made[9].id})
            g.append_lineage(made[2].id, {"event": "annotated"})
            g.update(dataclasses.replace(g.get(made[3].id), importance=0.9, tags=("kept",)))

        lm.graph_write(forget)
        lm.touch([made[1].seq, made[1].seq])
        lm.put_document("engine", {"r": 0.5, "xs": [1, 2]})
        return [m.id for m in made]


def _view(store, ids):
    """Everything a server can read through the protocol."""
    def graph(g):
        return ([sorted(map(repr, g.edges(i))) for i in ids], list(g.tombstones()),
                [g.get_tombstone(i) for i in ids], g.get_reversal("rev-1"), [g.lineage(i) for i in ids],
                g.edge_count(), [r.id for r in g.recent(50, None, None)])

    records = [store.get(i) for i in ids]
    seqs = [r.seq for r in records if r is not None]
    return {"records": records, "oplog": store.oplog_since(0), "last_seq": store.last_seq(),
            "count": store.count(), "sessions": [store.session_count(f"s{k}") for k in range(3)],
            "blobs": [encode_fingerprint(fp) if fp else None for fp in store.fingerprints(seqs)],
            "triples": [[t[:3] for t in store.triples_of(i)] for i in ids], "triple_count": store.triple_count(),
            "live_triples": [t[:4] for t in store.live_triples()], "engine": store.get_document("engine"),
            "graph": store.graph_read(graph)}


def test_migration_round_trips_a_store(tmp_path, postgres_url):
    ids = _history(tmp_path)
    seen = []
    report = migrate_lmdb_to_postgres(tmp_path, postgres_url, progress=lambda d, t: seen.append((d, t)), window=8)
    assert report.counts["memories"] == 21 and report.counts["tombstones"] == 1 and report.resumed_from == 0
    assert seen[-1][0] == seen[-1][1] == report.counts["oplog"]
    with LmdbStore(tmp_path / "store", readonly=True) as lm, PgStore(postgres_url) as pg:
        want, got = _view(lm, ids), _view(pg, ids)
        for key in want:
            assert got[key] == want[key], key
        assert pg.check() == []
        with pg.connection() as conn:  # dropped for the bulk copy, built once at the end
            assert sorted(index_names(conn)) == [f"vec_e{s:02d}_hnsw" for s in HNSW_SPACES]
        # the copy is a working store: searchable, and its next write continues the log
        lm_fp = lm.fingerprints([lm.get(ids[0]).seq])[0]
        assert PgIndexes(pg).search(1, lm_fp[1], 1)[0][0] == lm.get(ids[0]).seq
        new = pg.put(record(session="s0"), fingerprint(np.random.default_rng(9), tokens=3))
        assert new.seq == want["last_seq"] + 1 and new.session_position == want["sessions"][0]
        restored_fp = pg.fingerprints([pg.get(ids[6]).seq])[0]
        assert same_fingerprint(restored_fp, lm.fingerprints([lm.get(ids[6]).seq])[0], multivector_f16=False)


def test_an_interrupted_migration_is_refused_then_resumes(tmp_path, postgres_url):
    ids = _history(tmp_path)

    def stop_after_two_windows(done, total):
        if done >= 10:
            raise KeyboardInterrupt  # the operator's ^C between two windows

    with pytest.raises(KeyboardInterrupt):
        migrate_lmdb_to_postgres(tmp_path, postgres_url, progress=stop_after_two_windows, window=5)
    with pytest.raises(StorageError, match="has not finished"):
        PgStore(postgres_url)
    report = migrate_lmdb_to_postgres(tmp_path, postgres_url, window=5)
    assert report.resumed_from == 10
    with LmdbStore(tmp_path / "store", readonly=True) as lm, PgStore(postgres_url) as pg:
        assert _view(pg, ids) == _view(lm, ids)
    LmdbStore(tmp_path / "other" / "store").close()  # another (empty) store into the now-served database
    with pytest.raises(StorageError, match="already holds"):
        migrate_lmdb_to_postgres(tmp_path / "other", postgres_url)


def test_a_database_that_holds_a_store_is_refused(tmp_path, postgres_url):
    with PgStore(postgres_url) as pg:
        pg.put(record(), fingerprint(np.random.default_rng(1), tokens=3))
    _history(tmp_path)
    with pytest.raises(StorageError, match="already holds"):
        migrate_lmdb_to_postgres(tmp_path, postgres_url)
