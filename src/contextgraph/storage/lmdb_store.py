"""The source of truth: memories, their fingerprints and the operation log in one LMDB environment.

Named databases (all keys of seqs are 8-byte big-endian, so LMDB's byte order is numeric order):
    meta          b"schema" → b"1", b"store_id" → 32 hex, b"next_seq" → u64, b"session:" + name → u64 count
    memories      id → record (codec)
    fingerprints  seq → fingerprint (codec)
    ids           id → seq
    seqs          seq → id
    oplog         seq → op byte (b"p" | b"d" | b"r") + memory seq (u64) [+ u16 space mask for b"r"] + id
    edges_out     source id + target id + type byte → edge (JSON)      the graph, by source
    edges_in      target id + source id + type byte → b""             the same edges, by target
    tombstones    id → tombstone: u32 length + JSON (exact prior record, edges, deletion time, reason,
                  reversal hash) + the exact fingerprint blob
    reversals     reversal hash → JSON (what one undoable operation changed)
    lineage       id → JSON list of events, append-only

Every mutation is one write transaction, synced before it returns, so a crash (SIGKILL, power) leaves each
memory either wholly present (record + fingerprint + ids + seqs + oplog) or wholly absent. Seqs come from one
counter shared by puts and deletes, so the oplog is totally ordered and a memory's seq is its put's position
in it. Reads open a fresh short transaction each time: a long-lived one would not see other processes' commits.

The file itself (opening it, its damage checks, the transactions and map growth) is storage.lmdb_env's.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import lmdb

from contextgraph.errors import InvalidFingerprint, StorageError
from contextgraph.fingerprint import SPACES, Fingerprint
from contextgraph.storage.base import Edge, MemoryRecord, OplogEntry
from contextgraph.storage.codec import (
    decode_columns,
    decode_fingerprint,
    decode_record,
    decode_triples,
    encode_fingerprint,
    encode_record,
    encode_triples,
)
from contextgraph.storage.fingerprint_columns import FingerprintColumns
from contextgraph.storage.lmdb_check import consistency_problems
from contextgraph.storage.lmdb_env import LmdbFile
from contextgraph.storage.lmdb_graph import GraphTxn
from contextgraph.storage.lmdb_keys import U64, decode_oplog, next_seq, present, read_counter, seq_key, session_key
from contextgraph.storage.parallel_reads import read_many

_DOC_PREFIX = b"doc:"  # meta-table keys of service documents, apart from the store's own counters
_ALL_SPACES = frozenset(s.id for s in SPACES)
_SCAN_CHUNK = 256

T = TypeVar("T")


def decode_fingerprint_blob(blob: bytes | memoryview, wanted: frozenset[int] | None) -> Fingerprint:
    """Decode out of a transaction's buffer. The whole fingerprint: one copy of the blob, arrays are views of
    it (~25% faster). Some spaces: a copy of each, so keeping E1 of every memory does not keep all 13 alive."""
    if wanted is None:
        return decode_fingerprint(bytes(blob))
    return decode_fingerprint(blob, wanted, copy=True)


class LmdbStore(LmdbFile):
    """base.MemoryStore over LMDB. Thread-safe; mutations are meant to come from one writer thread (writer.py)
    but are correct from any thread (LMDB serialises write transactions, across processes too)."""

    # --- writes ------------------------------------------------------------------------------------------------

    def put(self, record: MemoryRecord, fingerprint: Fingerprint, edges: Sequence[Edge] = (),
            temporal: Callable[[str, str], Edge] | None = None, triples: Sequence[Any] = ()) -> MemoryRecord:
        """Commit the memory, its `edges` (to memories that still exist) and its "created" lineage event. With
        `temporal`, also the edge temporal(previous id, new id) from the session's previous live memory; with
        `triples`, its E11 relation triples (codec.encode_triples)."""
        missing = _ALL_SPACES - fingerprint.keys()
        if missing:
            raise InvalidFingerprint(
                f"fingerprint lacks spaces {sorted(missing)}: all 13 are stored or none", missing=sorted(missing)
            )
        blob = encode_fingerprint(fingerprint)  # outside the transaction: keep the write lock short
        triples_blob = encode_triples(triples) if triples else None
        memory_id = record.id.encode()
        db = self._db

        def txn_fn(txn: lmdb.Transaction) -> MemoryRecord:
            if txn.get(memory_id, db=db["ids"]) is not None:
                raise StorageError(f"memory {record.id} already exists", memory_id=record.id)
            seq = next_seq(txn, db["meta"])
            skey = session_key(record.session)
            raw = txn.get(skey, db=db["meta"])
            position = U64.unpack(raw)[0] if raw is not None else 0
            txn.put(skey, seq_key(position + 1), db=db["meta"])
            stored = dataclasses.replace(record, seq=seq, session_position=position)
            k = seq_key(seq)
            txn.put(memory_id, encode_record(stored), db=db["memories"])
            txn.put(k, blob, db=db["fingerprints"])
            txn.put(memory_id, k, db=db["ids"])
            txn.put(k, memory_id, db=db["seqs"])
            txn.put(k, b"p" + k + memory_id, db=db["oplog"])
            g = GraphTxn(txn, self._db)
            last_key = b"last:" + skey
            previous = txn.get(last_key, db=db["meta"])
            if temporal is not None and previous is not None and g.exists(bytes(previous).decode()):
                g.put_edge(temporal(bytes(previous).decode(), record.id))
            txn.put(last_key, memory_id, db=db["meta"])
            for edge in edges:
                if g.exists(edge.other(record.id)):
                    g.put_edge(edge)
            g.append_lineage(record.id, {"event": "created", "at": record.created_at, "seq": seq})
            if triples_blob is not None:
                txn.put(memory_id, triples_blob, db=db["triples"])
            return stored

        return self._write(txn_fn)

    # --- E11 relation triples --------------------------------------------------------------------------------
    def live_triples(self) -> list[tuple[str, str, str, str, Any, Any]]:
        """(memory id, head, relation, tail, h, t) of every live memory's triples. A forgotten memory keeps its
        triples (its restore brings them back) but they do not count while it is gone."""
        out = []
        with self._read() as txn:
            ids = self._db["ids"]
            for key, blob in txn.cursor(db=self._db["triples"]):
                if txn.get(bytes(key), db=ids) is None:
                    continue
                memory_id = bytes(key).decode()
                out.extend((memory_id, *triple) for triple in decode_triples(blob))
        return out

    def triples_of(self, memory_id: str) -> list[tuple[str, str, str, Any, Any]]:
        """(head, relation, tail, h, t) of one memory's stored triples (none: [])."""
        with self._read() as txn:
            blob = txn.get(memory_id.encode(), db=self._db["triples"])
            return decode_triples(blob) if blob is not None else []

    def triple_count(self) -> int:
        """Memories with triples stored (live or not): a cheap change counter for fitted models."""
        with self._read() as txn:
            return txn.stat(self._db["triples"])["entries"]

    # --- documents the services keep beside the memories (the cognitive engine's state) -------------------
    def put_document(self, name: str, doc: dict) -> None:
        """Store one JSON document under `name` in the meta table (synced, like every write)."""
        raw = json.dumps(doc, separators=(",", ":")).encode()
        self._write(lambda txn: txn.put(_DOC_PREFIX + name.encode(), raw, db=self._db["meta"]))

    def get_document(self, name: str) -> dict | None:
        with self._read() as txn:
            raw = txn.get(_DOC_PREFIX + name.encode(), db=self._db["meta"])
            return None if raw is None else json.loads(bytes(raw))

    def graph_write(self, fn: Callable[[GraphTxn], T]) -> T:
        """Run `fn` with a GraphTxn in ONE write transaction: a curation operation's record, fingerprint, edge,
        tombstone and lineage changes commit together or not at all. `fn` must have no outside effects."""
        return self._write(lambda txn: fn(GraphTxn(txn, self._db)))

    def graph_read(self, fn: Callable[[GraphTxn], T]) -> T:
        """Run `fn` with a read-only GraphTxn on one consistent snapshot (copy what you keep: done by GraphTxn)."""
        with self._read() as txn:
            return fn(GraphTxn(txn, self._db))

    def delete(self, memory_id: str) -> bool:
        def txn_fn(txn: lmdb.Transaction) -> bool:
            g = GraphTxn(txn, self._db)
            if not g.exists(memory_id):
                return False
            g.delete_memory(memory_id)  # its edges go with it: no edge may point at a missing memory
            return True

        return self._write(txn_fn)

    def update(self, record: MemoryRecord) -> MemoryRecord:
        mid = record.id.encode()
        memories = self._db["memories"]

        def txn_fn(txn: lmdb.Transaction) -> MemoryRecord:
            raw = txn.get(mid, db=memories)
            if raw is None:
                raise StorageError(f"memory {record.id} does not exist", memory_id=record.id)
            old = decode_record(raw)
            # seq and session_position belong to the store: an update cannot move a memory in the log
            new = dataclasses.replace(record, seq=old.seq, session_position=old.session_position)
            txn.put(mid, encode_record(new), db=memories)
            return new

        return self._write(txn_fn)

    def rewrite_spaces(self, updates: Mapping[str, Mapping[int, Any]]) -> list[str]:
        """base.MemoryStore.rewrite_spaces: one transaction for every memory listed (GraphTxn.rewrite_spaces)."""
        return self.graph_write(lambda g: [mid for mid, vectors in updates.items() if g.rewrite_spaces(mid, vectors)])

    def touch(self, seqs: Sequence[int], now: float | None = None) -> None:
        when = time.time() if now is None else now
        db = self._db

        def txn_fn(txn: lmdb.Transaction) -> None:
            for seq in seqs:
                mid = txn.get(seq_key(seq), db=db["seqs"])
                if mid is None:
                    continue  # deleted since the search found it
                mid = bytes(mid)
                old = decode_record(present(txn.get(mid, db=db["memories"]), f"the record of {mid.decode()}"))
                new = dataclasses.replace(old, access_count=old.access_count + 1, last_accessed=when)
                txn.put(mid, encode_record(new), db=db["memories"])

        if seqs:
            self._write(txn_fn)

    # --- reads -------------------------------------------------------------------------------------------------

    def get(self, memory_id: str) -> MemoryRecord | None:
        with self._read() as txn:
            raw = txn.get(memory_id.encode(), db=self._db["memories"])
            return None if raw is None else decode_record(raw)

    def get_by_seq(self, seqs: Sequence[int]) -> list[MemoryRecord | None]:
        out: list[MemoryRecord | None] = []
        with self._read() as txn:
            for seq in seqs:
                mid = txn.get(seq_key(seq), db=self._db["seqs"])
                raw = None if mid is None else txn.get(mid, db=self._db["memories"])
                out.append(None if raw is None else decode_record(raw))
        return out

    def fingerprints(self, seqs: Sequence[int], spaces: Sequence[int] | None = None) -> list[Fingerprint | None]:
        """One read of the batch (storage.parallel_reads: a few threads when it comes from the disk). Arrays may
        be read-only: treat them as values, copy to modify."""
        wanted = None if spaces is None else frozenset(spaces)
        with self._read() as txn:
            blobs = read_many(txn, self.env, self._db["fingerprints"], [seq_key(seq) for seq in seqs])
            return [None if blob is None else decode_fingerprint_blob(blob, wanted) for blob in blobs]

    def fingerprint_columns(self, seqs: Sequence[int], spaces: Sequence[int]) -> FingerprintColumns:
        with self._read() as txn:  # under the gate: the map cannot move while read_many's threads read
            db, keys = self._db["fingerprints"], [seq_key(seq) for seq in seqs]
            return decode_columns(seqs, read_many(txn, self.env, db, keys), spaces)

    def count(self) -> int:
        with self._read() as txn:
            return txn.stat(self._db["memories"])["entries"]

    def session_count(self, session: str) -> int:
        """How many memories the session has stored: the next memory's session_position (E4 needs it before
        embedding; put() assigns the authoritative one)."""
        with self._read() as txn:
            raw = txn.get(session_key(session), db=self._db["meta"])
            return 0 if raw is None else U64.unpack(raw)[0]

    def last_seq(self) -> int:
        with self._read() as txn:
            return read_counter(txn, self._db["meta"]) - 1

    def oplog_since(self, seq: int, limit: int | None = None) -> list[OplogEntry]:
        out: list[OplogEntry] = []
        with self._read() as txn:
            cursor = txn.cursor(db=self._db["oplog"])
            if not cursor.set_range(seq_key(seq + 1)):
                return out
            for k, v in cursor:
                op, memory_seq, memory_id, spaces = decode_oplog(bytes(v))
                out.append(OplogEntry(U64.unpack(k)[0], op, memory_id, memory_seq, spaces))
                if limit is not None and len(out) >= limit:
                    break
        return out

    def scan(self, spaces: Sequence[int] | None = None) -> Iterator[tuple[MemoryRecord, Fingerprint]]:
        # In chunks, each in its own short transaction: a reindex of 100K memories must not pin one snapshot
        # (it would block map growth and keep freed pages from reuse). Each chunk is consistent on its own.
        after = 0
        db = self._db
        wanted = None if spaces is None else frozenset(spaces)
        while True:
            chunk: list[tuple[MemoryRecord, Fingerprint]] = []
            with self._read() as txn:
                cursor = txn.cursor(db=db["fingerprints"])
                if cursor.set_range(seq_key(after + 1)):
                    for k, blob in cursor:
                        mid = present(txn.get(k, db=db["seqs"]), f"the id of seq {U64.unpack(k)[0]}")
                        raw = present(txn.get(mid, db=db["memories"]), f"the record of {bytes(mid).decode()}")
                        chunk.append((decode_record(raw), decode_fingerprint_blob(blob, wanted)))
                        if len(chunk) == _SCAN_CHUNK:
                            break
            if not chunk:
                return
            after = chunk[-1][0].seq
            yield from chunk

    def check(self) -> list[str]:
        """Problems found by a full consistency walk (empty when sound): every record has its ids, seqs,
        fingerprint (all 13 spaces) and put entry; every fingerprint has a record. For tests and `doctor`."""
        with self._read() as txn:
            return consistency_problems(txn, self._db)
