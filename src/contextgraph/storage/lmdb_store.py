"""The source of truth: memories, their fingerprints and the operation log in one LMDB environment.

Named databases (all keys of seqs are 8-byte big-endian, so LMDB's byte order is numeric order):
    meta          b"schema" → b"1", b"store_id" → 32 hex, b"next_seq" → u64, b"session:" + name → u64 count
    memories      id → record (codec)
    fingerprints  seq → fingerprint (codec)
    ids           id → seq
    seqs          seq → id
    oplog         seq → op byte (b"p" | b"d") + memory seq (u64) + id

Every mutation is one write transaction, synced before it returns, so a crash (SIGKILL, power) leaves each
memory either wholly present (record + fingerprint + ids + seqs + oplog) or wholly absent. Seqs come from one
counter shared by puts and deletes, so the oplog is totally ordered and a memory's seq is its put's position
in it. Reads open a fresh short transaction each time: a long-lived one would not see other processes' commits.

Several processes may open one directory (LMDB's lock file coordinates them); one process must open it once
only, because POSIX fcntl locks are per process and closing a second handle would drop the first one's locks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import lmdb

from contextgraph.errors import InvalidFingerprint, StorageError
from contextgraph.fingerprint import SPACES, Fingerprint
from contextgraph.storage.base import MemoryRecord, OplogEntry
from contextgraph.storage.codec import decode_fingerprint, decode_record, encode_fingerprint, encode_record
from contextgraph.storage.locks import RWLock

SCHEMA_VERSION = b"1"
DEFAULT_MAP_SIZE = 8 << 30  # a ceiling, not an allocation: the data file is sparse and grows with the data
_DBS = (b"meta", b"memories", b"fingerprints", b"ids", b"seqs", b"oplog")
_ALL_SPACES = frozenset(s.id for s in SPACES)
_U64 = struct.Struct(">Q")
_OPS = {b"p"[0]: "put", b"d"[0]: "delete"}
_SCAN_CHUNK = 256

_open_paths: set[str] = set()
_open_lock = threading.Lock()

T = TypeVar("T")


def _key(seq: int) -> bytes:
    return _U64.pack(seq)


def _session_key(session: str) -> bytes:
    raw = session.encode()
    # LMDB keys stop at 511 bytes; a client may name its session anything
    return b"session:" + (raw if len(raw) <= 256 else hashlib.sha256(raw).digest())


def _decode_fp(blob: memoryview | None, wanted: frozenset[int] | None) -> Fingerprint | None:
    """Decode out of a transaction's buffer. The whole fingerprint: one copy of the blob, arrays are views of
    it (~25% faster). Some spaces: a copy of each, so keeping E1 of every memory does not keep all 13 alive."""
    if blob is None:
        return None
    if wanted is None:
        return decode_fingerprint(bytes(blob))
    return decode_fingerprint(blob, wanted, copy=True)


class LmdbStore:
    """base.MemoryStore over LMDB. Thread-safe; mutations are meant to come from one writer thread (writer.py)
    but are correct from any thread (LMDB serialises write transactions, across processes too)."""

    def __init__(
        self, path: Path | str, map_size: int = DEFAULT_MAP_SIZE, readonly: bool = False, sync: bool = True
    ) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if not readonly:
            self.path.mkdir(parents=True, exist_ok=True)
        self._real = os.path.realpath(self.path)
        with _open_lock:
            if self._real in _open_paths:
                raise StorageError(f"{self.path} is already open in this process; share that LmdbStore")
            _open_paths.add(self._real)
        # Transactions share the gate; growing the map takes it exclusively, because mdb_env_set_mapsize must not
        # run while any transaction of this process is open (LMDB does not check; it would unmap under a reader).
        self._gate = RWLock()
        try:
            self._env = lmdb.open(
                str(self.path), map_size=map_size, max_dbs=len(_DBS), max_readers=126, lock=True,
                readonly=readonly, sync=sync, metasync=sync, subdir=True,
            )
            self._db = {name.decode(): self._env.open_db(name, create=not readonly) for name in _DBS}
            if not readonly:
                # a process killed while reading leaves its reader slot behind, pinning an old snapshot (so
                # freed pages cannot be reused and the file grows); clear such slots of dead processes
                self._env.reader_check()
                self._write(self._init_meta)
            with self._read() as txn:
                schema = bytes(txn.get(b"schema", b"?", db=self._db["meta"]))
                store_id = bytes(txn.get(b"store_id", b"", db=self._db["meta"]))
            if schema != SCHEMA_VERSION:
                raise StorageError(f"{self.path}: store schema {schema.decode()}, this code reads 1")
            self.store_id = store_id.decode()
        except BaseException as exc:
            self.close()
            if isinstance(exc, lmdb.Error):
                raise StorageError(f"cannot open the store at {self.path}: {exc}") from exc
            raise

    def _init_meta(self, txn: lmdb.Transaction) -> None:
        meta = self._db["meta"]
        if txn.get(b"schema", db=meta) is None:
            txn.put(b"schema", SCHEMA_VERSION, db=meta)
            txn.put(b"store_id", uuid.uuid4().hex.encode(), db=meta)
            txn.put(b"next_seq", _key(1), db=meta)

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        if getattr(self, "_env", None) is not None:  # absent when lmdb.open itself failed
            self._env.close()
            self._env = None
        self._release()

    def _release(self) -> None:
        with _open_lock:
            _open_paths.discard(self._real)

    def __enter__(self) -> LmdbStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transactions ------------------------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[lmdb.Transaction]:
        """A short read transaction. Values are buffers into the map, valid only inside it: copy what you keep."""
        for attempt in range(2):
            self._gate.acquire_read()
            try:
                txn = self._env.begin(buffers=True)
                break
            except lmdb.MapResizedError as exc:
                self._gate.release_read()
                if attempt:
                    raise StorageError("store read failed: map size kept changing") from exc
            except lmdb.Error as exc:
                self._gate.release_read()
                raise StorageError(f"store read failed: {exc}") from exc
            self._adopt_map_size()
        try:
            yield txn
        except lmdb.Error as exc:
            raise StorageError(f"store read failed: {exc}") from exc
        finally:
            txn.abort()
            self._gate.release_read()

    def _write(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """Run `fn` in one write transaction and commit it (synced). A full map is grown ×2 and the
        transaction retried once; `fn` must therefore have no effects outside the transaction."""
        for attempt in range(3):
            self._gate.acquire_read()
            try:
                with self._env.begin(write=True) as txn:
                    return fn(txn)
            except lmdb.MapFullError as exc:
                if attempt:
                    raise StorageError(f"store is full at {self._env.info()['map_size']} bytes") from exc
                grow = True
            except lmdb.MapResizedError:
                grow = False
            except lmdb.Error as exc:
                raise StorageError(f"store write failed: {exc}") from exc
            finally:
                self._gate.release_read()
            if grow:
                self._grow_map()
            else:
                self._adopt_map_size()
        raise StorageError("store write failed: map size kept changing")

    def _grow_map(self) -> None:
        with self._gate.write():
            self._env.set_mapsize(self._env.info()["map_size"] * 2)

    def _adopt_map_size(self) -> None:
        # another process grew the map; 0 means "take the size recorded in the file"
        with self._gate.write():
            self._env.set_mapsize(0)

    @staticmethod
    def _next_seq(txn: lmdb.Transaction, meta: lmdb._Database) -> int:
        seq = _U64.unpack(txn.get(b"next_seq", db=meta))[0]
        txn.put(b"next_seq", _key(seq + 1), db=meta)
        return seq

    # --- writes ------------------------------------------------------------------------------------------------

    def put(self, record: MemoryRecord, fingerprint: Fingerprint) -> MemoryRecord:
        missing = _ALL_SPACES - fingerprint.keys()
        if missing:
            raise InvalidFingerprint(
                f"fingerprint lacks spaces {sorted(missing)}: all 13 are stored or none", missing=sorted(missing)
            )
        blob = encode_fingerprint(fingerprint)  # outside the transaction: keep the write lock short
        memory_id = record.id.encode()
        db = self._db

        def txn_fn(txn: lmdb.Transaction) -> MemoryRecord:
            if txn.get(memory_id, db=db["ids"]) is not None:
                raise StorageError(f"memory {record.id} already exists", memory_id=record.id)
            seq = self._next_seq(txn, db["meta"])
            session_key = _session_key(record.session)
            raw = txn.get(session_key, db=db["meta"])
            position = _U64.unpack(raw)[0] if raw is not None else 0
            txn.put(session_key, _key(position + 1), db=db["meta"])
            stored = dataclasses.replace(record, seq=seq, session_position=position)
            k = _key(seq)
            txn.put(memory_id, encode_record(stored), db=db["memories"])
            txn.put(k, blob, db=db["fingerprints"])
            txn.put(memory_id, k, db=db["ids"])
            txn.put(k, memory_id, db=db["seqs"])
            txn.put(k, b"p" + k + memory_id, db=db["oplog"])
            return stored

        return self._write(txn_fn)

    def delete(self, memory_id: str) -> bool:
        mid = memory_id.encode()
        db = self._db

        def txn_fn(txn: lmdb.Transaction) -> bool:
            k = txn.get(mid, db=db["ids"])
            if k is None:
                return False
            k = bytes(k)
            for key, name in ((mid, "memories"), (mid, "ids"), (k, "seqs"), (k, "fingerprints")):
                txn.delete(key, db=db[name])
            op_seq = self._next_seq(txn, db["meta"])
            txn.put(_key(op_seq), b"d" + k + mid, db=db["oplog"])
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

    def touch(self, seqs: Sequence[int], now: float | None = None) -> None:
        when = time.time() if now is None else now
        db = self._db

        def txn_fn(txn: lmdb.Transaction) -> None:
            for seq in seqs:
                mid = txn.get(_key(seq), db=db["seqs"])
                if mid is None:
                    continue  # deleted since the search found it
                mid = bytes(mid)
                old = decode_record(txn.get(mid, db=db["memories"]))
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
                mid = txn.get(_key(seq), db=self._db["seqs"])
                raw = None if mid is None else txn.get(mid, db=self._db["memories"])
                out.append(None if raw is None else decode_record(raw))
        return out

    def fingerprints(self, seqs: Sequence[int], spaces: Sequence[int] | None = None) -> list[Fingerprint | None]:
        """One transaction for the batch. Arrays may be read-only: treat them as values, copy to modify."""
        wanted = None if spaces is None else frozenset(spaces)
        with self._read() as txn:
            db = self._db["fingerprints"]
            return [_decode_fp(txn.get(_key(seq), db=db), wanted) for seq in seqs]

    def count(self) -> int:
        with self._read() as txn:
            return txn.stat(self._db["memories"])["entries"]

    def session_count(self, session: str) -> int:
        """How many memories the session has stored: the next memory's session_position (E4 needs it before
        embedding; put() assigns the authoritative one)."""
        with self._read() as txn:
            raw = txn.get(_session_key(session), db=self._db["meta"])
            return 0 if raw is None else _U64.unpack(raw)[0]

    def last_seq(self) -> int:
        with self._read() as txn:
            return _U64.unpack(txn.get(b"next_seq", db=self._db["meta"]))[0] - 1

    def oplog_since(self, seq: int, limit: int | None = None) -> list[OplogEntry]:
        out: list[OplogEntry] = []
        with self._read() as txn:
            cursor = txn.cursor(db=self._db["oplog"])
            if not cursor.set_range(_key(seq + 1)):
                return out
            for k, v in cursor:
                v = bytes(v)
                out.append(OplogEntry(_U64.unpack(k)[0], _OPS[v[0]], v[9:].decode(), _U64.unpack_from(v, 1)[0]))
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
                if cursor.set_range(_key(after + 1)):
                    for k, blob in cursor:
                        mid = txn.get(k, db=db["seqs"])
                        raw = txn.get(mid, db=db["memories"])
                        chunk.append((decode_record(raw), _decode_fp(blob, wanted)))
                        if len(chunk) == _SCAN_CHUNK:
                            break
            if not chunk:
                return
            after = chunk[-1][0].seq
            yield from chunk

    def check(self) -> list[str]:
        """Problems found by a full consistency walk (empty when sound): every record has its ids, seqs,
        fingerprint (all 13 spaces) and put entry; every fingerprint has a record. For tests and `doctor`."""
        problems: list[str] = []
        db = self._db
        with self._read() as txn:
            next_seq = _U64.unpack(txn.get(b"next_seq", db=db["meta"]))[0]
            n = {name: txn.stat(db[name])["entries"] for name in ("memories", "fingerprints", "ids", "seqs")}
            if len(set(n.values())) != 1:
                problems.append(f"table sizes differ: {n}")
            for mid, raw in txn.cursor(db=db["memories"]):
                mid = bytes(mid)
                rec = decode_record(raw)
                k = _key(rec.seq)
                name = mid.decode()
                if txn.get(mid, db=db["ids"]) != k:
                    problems.append(f"{name}: ids does not map to seq {rec.seq}")
                if txn.get(k, db=db["seqs"]) != mid:
                    problems.append(f"{name}: seqs[{rec.seq}] does not map back")
                blob = txn.get(k, db=db["fingerprints"])
                if blob is None:
                    problems.append(f"{name}: no fingerprint")
                elif set(decode_fingerprint(blob)) != _ALL_SPACES:
                    problems.append(f"{name}: fingerprint is incomplete")
                if txn.get(k, db=db["oplog"]) != b"p" + k + mid:
                    problems.append(f"{name}: no put entry at seq {rec.seq}")
                if rec.seq >= next_seq:
                    problems.append(f"{name}: seq {rec.seq} is beyond next_seq {next_seq}")
            cursor = txn.cursor(db=db["oplog"])
            if cursor.last() and _U64.unpack(cursor.key())[0] >= next_seq:
                problems.append("oplog runs beyond next_seq")
        return problems
