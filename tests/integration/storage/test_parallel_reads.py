"""get_many (several threads, each in its own read transaction) against reading in one transaction, on a real
LMDB store: the same values in the same order, absent keys as None, short batches left to the caller; and
fingerprint_columns, which uses it, equal to decoding one fingerprint at a time."""

from __future__ import annotations

import lmdb
import numpy as np
import pytest
from storage_fakes import fingerprint, record, same_fingerprint

from contextgraph.fingerprint import SPACES
from contextgraph.storage import parallel_reads
from contextgraph.storage.codec import decode_fingerprint
from contextgraph.storage.lmdb_keys import seq_key
from contextgraph.storage.lmdb_store import LmdbStore


@pytest.fixture
def filled(tmp_path):
    rng = np.random.default_rng(11)
    with LmdbStore(tmp_path / "db") as store:
        seqs = [store.put(record(content=f"memory {i}"), fingerprint(rng, tokens=8 + i % 40)).seq for i in range(90)]
        yield store, seqs


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_get_many_reads_what_one_transaction_reads(filled, threads):
    store, seqs = filled
    keys = [seq_key(seq) for seq in seqs[::-1]] + [seq_key(10_000), seq_key(seqs[5])]  # one absent, one twice
    db = store._db["fingerprints"]
    got = parallel_reads.get_many(store.env, db, keys, threads=threads)
    with store.env.begin(db=db, buffers=False) as txn:
        expected = [txn.get(key) for key in keys]
    assert got == expected and got[-2] is None and got[-1] == got[len(seqs) - 6]


def test_short_batches_and_one_thread_are_left_to_the_caller(filled):
    store, seqs = filled
    db = store._db["fingerprints"]
    keys = [seq_key(seq) for seq in seqs]
    assert parallel_reads.get_many(store.env, db, keys[:parallel_reads.MIN_KEYS - 1]) is None
    assert parallel_reads.get_many(store.env, db, keys, threads=1) is None


def test_fingerprint_columns_equal_one_fingerprint_at_a_time(filled):
    store, seqs = filled
    asked = seqs[::-1] + [10_000]  # newest first, and one that is not stored
    columns = store.fingerprint_columns(asked, [space.id for space in SPACES])
    assert columns.seqs == seqs[::-1]
    for row, fp in enumerate(store.fingerprints(seqs[::-1])):
        assert same_fingerprint(columns.fingerprint(row), fp)


@pytest.mark.parametrize("cold_seconds", [0.0, 1e9])  # every probe "cold" (threads), or none (the caller alone)
def test_read_many_reads_the_same_either_way(filled, monkeypatch, cold_seconds):
    store, seqs = filled
    monkeypatch.setattr(parallel_reads, "COLD_SECONDS", cold_seconds)
    calls = []
    get_many = parallel_reads.get_many
    monkeypatch.setattr(parallel_reads, "get_many", lambda *a, **k: calls.append(1) or get_many(*a, **k))
    keys = [seq_key(seq) for seq in seqs] + [seq_key(10_000)]
    db = store._db["fingerprints"]
    with store.env.begin(db=db, buffers=True) as txn:
        got = [None if v is None else bytes(v) for v in parallel_reads.read_many(txn, store.env, db, keys)]
        expected = [None if v is None else bytes(v) for v in (txn.get(key) for key in keys)]
    assert got == expected and got[-1] is None
    assert len(calls) == (1 if cold_seconds == 0.0 else 0)


def test_a_failed_thread_transaction_leaves_the_batch_to_the_caller(filled, monkeypatch):
    store, seqs = filled

    def no_reader_slot(env, db, keys):
        raise lmdb.ReadersFullError("no reader slot left")

    monkeypatch.setattr(parallel_reads, "_fetch", no_reader_slot)
    db = store._db["fingerprints"]
    assert parallel_reads.get_many(store.env, db, [seq_key(seq) for seq in seqs]) is None
    monkeypatch.setattr(parallel_reads, "COLD_SECONDS", 0.0)  # every batch "cold": the threads are tried, and fail
    columns = store.fingerprint_columns(seqs, [1, 12])
    assert columns.seqs == seqs


@pytest.mark.parametrize("spaces", [None, [1, 6, 12]])
def test_fingerprints_read_by_threads_equal_one_at_a_time(filled, monkeypatch, spaces):
    """LmdbStore.fingerprints (the UTL neighbourhood's read) through the threads, against each key decoded alone
    in one transaction."""
    store, seqs = filled
    monkeypatch.setattr(parallel_reads, "COLD_SECONDS", 0.0)  # every batch "cold": the threads read it
    asked = seqs[::-1] + [10_000]
    got = store.fingerprints(asked, spaces)
    db = store._db["fingerprints"]
    with store.env.begin(db=db, buffers=False) as txn:
        blobs = [txn.get(seq_key(seq)) for seq in asked]
    assert got[-1] is None and blobs[-1] is None
    for fp, blob in zip(got[:-1], blobs[:-1]):
        assert same_fingerprint(fp, decode_fingerprint(blob, spaces, copy=True))
