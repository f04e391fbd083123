"""LmdbStore against a real LMDB environment in a temp directory."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from storage_fakes import fingerprint, record, same_fingerprint

from contextgraph.errors import InvalidFingerprint, StorageError
from contextgraph.storage.base import MemoryStore, OplogEntry
from contextgraph.storage.lmdb_store import LmdbStore


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.fixture
def store(tmp_path):
    with LmdbStore(tmp_path / "db") as s:
        yield s


def test_implements_the_protocol(store):
    assert isinstance(store, LmdbStore)
    for name in ("put", "get", "get_by_seq", "fingerprints", "count", "oplog_since", "scan", "delete", "last_seq",
                 "touch", "update"):
        assert name in MemoryStore.__dict__ and callable(getattr(store, name)), name


def test_put_assigns_seq_and_session_position(store, rng):
    a = store.put(record("s1"), fingerprint(rng))
    b = store.put(record("s2"), fingerprint(rng))
    c = store.put(record("s1"), fingerprint(rng))
    assert (a.seq, b.seq, c.seq) == (1, 2, 3)
    assert (a.session_position, b.session_position, c.session_position) == (0, 0, 1)
    assert store.count() == 3 and store.last_seq() == 3
    assert store.get(c.id) == c
    assert store.get("f" * 32) is None
    assert store.get_by_seq([3, 99, 1]) == [c, None, a]
    assert store.oplog_since(0) == [OplogEntry(1, "put", a.id, 1), OplogEntry(2, "put", b.id, 2),
                                    OplogEntry(3, "put", c.id, 3)]
    assert store.oplog_since(2) == [OplogEntry(3, "put", c.id, 3)]
    assert store.oplog_since(0, limit=1) == [OplogEntry(1, "put", a.id, 1)]
    assert store.check() == []


def test_fingerprints_round_trip_and_select_spaces(store, rng):
    fps = [fingerprint(rng) for _ in range(3)]
    seqs = [store.put(record(), fp).seq for fp in fps]
    got = store.fingerprints(seqs + [42])
    assert got[3] is None
    for fp, back in zip(fps, got[:3]):
        assert same_fingerprint(fp, back)
    only = store.fingerprints(seqs, spaces=[1, 6, 9])
    assert all(set(fp) == {1, 6, 9} for fp in only)


def test_incomplete_or_duplicate_puts_write_nothing(store, rng):
    fp = fingerprint(rng)
    del fp[12]
    with pytest.raises(InvalidFingerprint):
        store.put(record(), fp)
    first = store.put(record(), fingerprint(rng))
    with pytest.raises(StorageError):
        store.put(dataclasses.replace(first, content="again"), fingerprint(rng))
    assert store.count() == 1 and store.last_seq() == 1 and store.get(first.id) == first
    assert store.check() == []


def test_reopen_keeps_everything(tmp_path, rng):
    fp = fingerprint(rng)
    with LmdbStore(tmp_path / "db") as s:
        stored = s.put(record(extra={"lineage": ["x"]}), fp)
        store_id = s.store_id
    with LmdbStore(tmp_path / "db") as s:
        assert s.store_id == store_id
        assert s.get(stored.id) == stored
        assert same_fingerprint(fp, s.fingerprints([stored.seq])[0])
        assert s.put(record(), fingerprint(rng)).seq == 2
    with LmdbStore(tmp_path / "db", readonly=True) as ro:
        assert ro.count() == 2
        with pytest.raises(StorageError):
            ro.put(record(), fingerprint(rng))


def test_one_process_opens_a_directory_once(tmp_path):
    with LmdbStore(tmp_path / "db"):
        with pytest.raises(StorageError, match="already open"):
            LmdbStore(tmp_path / "db")
    LmdbStore(tmp_path / "db").close()  # closing released it


def test_delete_removes_everything_and_logs_it(store, rng):
    keep = store.put(record(), fingerprint(rng))
    gone = store.put(record("s9"), fingerprint(rng))
    assert store.delete(gone.id) is True
    assert store.delete(gone.id) is False
    assert store.get(gone.id) is None and store.get_by_seq([gone.seq]) == [None]
    assert store.fingerprints([gone.seq]) == [None]
    assert store.count() == 1 and store.last_seq() == 3
    assert store.oplog_since(2) == [OplogEntry(3, "delete", gone.id, gone.seq)]
    assert [r.id for r, _ in store.scan()] == [keep.id]
    assert store.check() == []
    assert store.put(record("s9"), fingerprint(rng)).session_position == 1  # positions are never reused


def test_update_and_touch(store, rng):
    a = store.put(record(), fingerprint(rng))
    b = store.put(record(), fingerprint(rng))
    updated = store.update(dataclasses.replace(a, importance=0.9, seq=77, session_position=5, tags=("x",)))
    assert updated.seq == a.seq and updated.session_position == a.session_position
    assert store.get(a.id) == updated and store.get(a.id).tags == ("x",)
    store.touch([a.seq, b.seq, 999], now=123.0)
    store.touch([a.seq], now=456.0)
    ra, rb = store.get_by_seq([a.seq, b.seq])
    assert (ra.access_count, ra.last_accessed, ra.importance) == (2, 456.0, 0.9)
    assert (rb.access_count, rb.last_accessed) == (1, 123.0)
    with pytest.raises(StorageError):
        store.update(record())
    assert store.last_seq() == 2  # metadata changes do not touch the oplog


def test_scan_is_in_seq_order_across_chunks(store, rng):
    ids = [store.put(record(), fingerprint(rng, tokens=2)).id for _ in range(600)]
    store.delete(ids[10])
    scanned = list(store.scan(spaces=[1, 9]))
    assert [r.id for r, _ in scanned] == ids[:10] + ids[11:]
    assert [r.seq for r, _ in scanned] == sorted(r.seq for r, _ in scanned)
    assert all(set(fp) == {1, 9} for _, fp in scanned)


def test_full_map_grows_and_retries(tmp_path, rng):
    with LmdbStore(tmp_path / "db", map_size=256 * 1024) as s:
        stored = [s.put(record(), fingerprint(rng)) for _ in range(40)]  # ~1.2 MB of fingerprints
        assert s._env.info()["map_size"] > 256 * 1024
        assert s.count() == 40 and s.check() == []
        assert s.get(stored[0].id) == stored[0]


def test_concurrent_readers_and_a_writer_thread(store, rng):
    fps = [fingerprint(rng, tokens=4) for _ in range(200)]
    errors: list[BaseException] = []
    done = threading.Event()

    def read():
        try:
            while not done.is_set():
                n = store.last_seq()
                if n:
                    assert store.get_by_seq([n])[0] is not None
                    assert store.fingerprints([n], spaces=[1])[0] is not None
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    for fp in fps:
        store.put(record(), fp)
    done.set()
    for t in readers:
        t.join()
    assert not errors and store.count() == 200


def test_unreadable_stores_are_refused_and_released(tmp_path):
    with pytest.raises(StorageError):
        LmdbStore(tmp_path / "missing", readonly=True)
    with LmdbStore(tmp_path / "db") as s:
        s._write(lambda txn: txn.put(b"schema", b"99", db=s._db["meta"]))  # a newer store format
    with pytest.raises(StorageError, match="schema 99"):
        LmdbStore(tmp_path / "db")
    with pytest.raises(StorageError, match="schema 99"):
        LmdbStore(tmp_path / "db")  # the failed open released the directory (no "already open")


def test_long_session_names_are_fine(store, rng):
    a = store.put(record("x" * 2000), fingerprint(rng, tokens=1))
    b = store.put(record("x" * 2000), fingerprint(rng, tokens=1))
    assert (a.session_position, b.session_position) == (0, 1)
