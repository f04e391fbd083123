"""PostgreSQL's in-process indexes (storage/postgres/search.py: E2-E4 and E6/E13 in an IndexSet kept in step
through the oplog) against the same spaces searched in SQL, which reads the database as it is: another server's
put and delete are found by the next search, a rewrite of another space passes; a saved set is loaded and the
log replayed into it, not rebuilt; a set of another database, or of other spaces, is rebuilt from this one. And
the schema's migration 2 drops the derived spaces' HNSW indexes a version-1 database has."""

from __future__ import annotations

import shutil
import uuid

import numpy as np
import psycopg
import pytest
from storage_fakes import fingerprint, record

from contextgraph.fingerprint import Sparse
from contextgraph.storage.indexes import IndexSet
from contextgraph.storage.postgres.schema import DERIVED_SPACES, HNSW_SPACES, hnsw_index_sql, index_names
from contextgraph.storage.postgres.search import PgIndexes
from contextgraph.storage.postgres.store import PgStore

RARE = 30_000  # an E6 term no fake fingerprint below holds (their terms are < 200)


def new_database(server) -> str:
    name = f"cg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.get_uri(name)


def new_fingerprint(rng: np.random.Generator, rare: bool = False) -> dict:
    """A fake fingerprint whose E6 terms come from a small vocabulary (df > 1), plus RARE when asked."""
    fp = fingerprint(rng, tokens=4, e6_nnz=30, e13_nnz=12)
    terms = np.unique(np.append(rng.integers(0, 200, 30), [RARE] if rare else [])).astype(np.int32)
    fp[6] = Sparse(terms, np.ones(len(terms), np.float32))
    return fp


def fill(pg: PgStore, n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    fps = [new_fingerprint(rng) for _ in range(n)]
    for i, fp in enumerate(fps):
        pg.put(record(content=f"m{i}"), fp)
    return fps


RARE_QUERY = Sparse(np.array([RARE], np.int32), np.ones(1, np.float32))


def same_answers(a: PgIndexes, b: PgIndexes, fps: list) -> None:
    for space in (6, 13):
        for fp in fps[::5] + [{6: RARE_QUERY, 13: RARE_QUERY}]:
            got, want = a.search(space, fp[space], 12, 0.5), b.search(space, fp[space], 12, 0.5)
            assert [s for s, _ in got] == [s for s, _ in want]
            np.testing.assert_allclose([x for _, x in got], [x for _, x in want], rtol=1e-9)
    for space in (2, 3, 4):  # the timeline against an exact scan in SQL (float32 there: scores to 1e-5)
        for fp in fps[::5]:
            got, want = a.search(space, fp[space], 8), b.search(space, fp[space], 8)
            assert [s for s, _ in got] == [s for s, _ in want]
            np.testing.assert_allclose([x for _, x in got], [x for _, x in want], atol=1e-5)


@pytest.fixture
def url(postgres_server):
    return new_database(postgres_server)


def test_another_servers_writes_are_found_by_the_next_search(url, tmp_path):
    ours, theirs = PgStore(url), PgStore(url)
    try:
        fps = fill(ours, 40, seed=1)
        cached, in_sql = PgIndexes(ours, tmp_path / "indexes"), PgIndexes(ours)
        same_answers(cached, in_sql, fps)
        new = theirs.put(record(content="theirs"), new_fingerprint(np.random.default_rng(9), rare=True))
        assert [s for s, _ in cached.search(6, RARE_QUERY, 5)] == [new.seq]
        same_answers(cached, in_sql, fps)
        theirs.delete(new.id)
        assert cached.search(6, RARE_QUERY, 5) == []
        other = ours.get_by_seq([3])[0]
        assert other is not None
        theirs.rewrite_spaces({other.id: {1: fps[2][1]}})  # a rewrite (sparse spaces are never rewritten)
        same_answers(cached, in_sql, fps)
    finally:
        ours.close()
        theirs.close()


def test_a_saved_cache_is_loaded_and_caught_up_not_rebuilt(url, tmp_path, monkeypatch):
    pg = PgStore(url)
    try:
        fps = fill(pg, 30, seed=2)
        PgIndexes(pg, tmp_path / "indexes").save(tmp_path / "indexes")
        later = pg.put(record(content="after the save"), new_fingerprint(np.random.default_rng(9), rare=True))
        # (a write the files never saw)

        def no_rebuild(*args, **kwargs):
            raise AssertionError("the saved cache was rebuilt")

        monkeypatch.setattr(IndexSet, "rebuild", no_rebuild)
        reopened = PgIndexes(pg, tmp_path / "indexes")
        assert [s for s, _ in reopened.search(6, RARE_QUERY, 5)] == [later.seq]
        same_answers(reopened, PgIndexes(pg), fps)
    finally:
        pg.close()


def test_a_cache_of_another_database_or_other_spaces_is_rebuilt(url, postgres_server, tmp_path):
    first, second = PgStore(url), PgStore(new_database(postgres_server))
    try:
        fill(first, 20, seed=3)
        fps = fill(second, 25, seed=4)
        PgIndexes(first, tmp_path / "indexes").save(tmp_path / "indexes")
        same_answers(PgIndexes(second, tmp_path / "indexes"), PgIndexes(second), fps)

        lmdb_layout = tmp_path / "lmdb-layout"  # a set saved with every indexed space, as LMDB keeps them
        full = IndexSet(second)
        full.catch_up()
        full.save(lmdb_layout)
        assert IndexSet.load(lmdb_layout, second, spaces=(6, 13)) is None
        shutil.rmtree(tmp_path / "indexes")
        shutil.copytree(lmdb_layout, tmp_path / "indexes")
        same_answers(PgIndexes(second, tmp_path / "indexes"), PgIndexes(second), fps)
    finally:
        first.close()
        second.close()


def test_migration_2_drops_the_derived_spaces_graphs(url):
    pg = PgStore(url)
    try:
        fill(pg, 3, seed=5)
        types = pg.space_types()
    finally:
        pg.close()
    with psycopg.connect(url, autocommit=True) as conn:  # the database as version 1 left it: ten graphs
        conn.execute("SET search_path = contextgraph, public")
        for space in DERIVED_SPACES:
            conn.execute(hnsw_index_sql(space, types[space][1]))
        conn.execute("DELETE FROM schema_version WHERE version = 2")
    pg = PgStore(url)  # opening migrates
    try:
        with pg.connection() as conn:
            assert sorted(index_names(conn)) == [f"vec_e{s:02d}_hnsw" for s in HNSW_SPACES]
            assert conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] == 2
    finally:
        pg.close()
