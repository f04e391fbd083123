"""The LMDB file under the store: opening it (its length checked against its meta pages before it is mapped, its
named tables, its schema), and the transactions every read and write of storage.lmdb_store runs in.

Transactions share a gate; growing the map takes it exclusively, because mdb_env_set_mapsize must not run while
any transaction of this process is open (LMDB does not check; it would unmap under a reader). A map another
process grew is adopted when a transaction sees it. A corrupted page met inside a transaction becomes a
StorageError that stops every process's writes (storage.lmdb_damage).

Several processes may open one directory (LMDB's lock file coordinates them); one process must open it once
only, because POSIX fcntl locks are per process and closing a second handle would drop the first one's locks.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self, TypeVar

import lmdb

from contextgraph.errors import StorageError
from contextgraph.storage.lmdb_damage import (
    CORRUPTION,
    WHAT_TO_DO,
    damaged,
    file_damage,
    read_note,
    refuse_writes_if_damaged,
)
from contextgraph.storage.lmdb_keys import seq_key
from contextgraph.storage.locks import RWLock

SCHEMA_VERSION = b"1"
STORE_DIR = "store"  # the LMDB environment's directory inside a data directory
DEFAULT_MAP_SIZE = 8 << 30  # a ceiling, not an allocation: the data file is sparse and grows with the data
_DBS = (b"meta", b"memories", b"fingerprints", b"ids", b"seqs", b"oplog", b"edges_out", b"edges_in",
        b"tombstones", b"reversals", b"lineage", b"triples")
_CORE_DBS = _DBS[:6]

_open_paths: set[str] = set()
_open_lock = threading.Lock()

T = TypeVar("T")


class LmdbFile:
    """One open LMDB environment with the store's named tables: its lifecycle and its transactions."""

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
            # before mapping it: a file shorter than its pages would kill this process (SIGBUS) at the first read
            if damage := file_damage(self.path):
                raise StorageError(f"the store cannot be opened: {damage}. {WHAT_TO_DO}", damage=damage)
            self._env: lmdb.Environment | None = lmdb.open(
                str(self.path), map_size=map_size, max_dbs=len(_DBS), max_readers=126, lock=True,
                readonly=readonly, sync=sync, metasync=sync, subdir=True,
                # MADV_RANDOM: read-around made each page fault read read_ahead_kb (bench_cold_reads.py)
                readahead=False,
            )
            self._db = {}
            for name in _DBS:
                try:
                    self._db[name.decode()] = self._env.open_db(name, create=not readonly)
                except lmdb.NotFoundError:
                    # a store written before the graph tables existed, opened read-only (doctor): the memory
                    # tables are all there; the graph ones appear on the next read-write open
                    if not readonly or name in _CORE_DBS:
                        raise
            if not readonly:
                # a process killed while reading leaves its reader slot behind, pinning an old snapshot (so
                # freed pages cannot be reused and the file grows); clear such slots of dead processes
                self._env.reader_check()
                if read_note(self.path) is None:  # a damaged store opens for reading only
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

    @staticmethod
    def read_store_id(path: Path | str) -> str | None:
        """The id of the store at `path`, read without writing anything, or None when no readable store is there
        (none yet, damaged, or open in this very process: a second handle would drop the first one's locks)."""
        if not (Path(path) / "data.mdb").is_file():
            return None
        try:
            with LmdbFile(path, readonly=True) as found:
                return found.store_id or None
        except StorageError:
            return None

    def _init_meta(self, txn: lmdb.Transaction) -> None:
        meta = self._db["meta"]
        if txn.get(b"schema", db=meta) is None:
            txn.put(b"schema", SCHEMA_VERSION, db=meta)
            txn.put(b"store_id", uuid.uuid4().hex.encode(), db=meta)
            txn.put(b"next_seq", seq_key(1), db=meta)

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        env = getattr(self, "_env", None)  # absent when lmdb.open itself failed
        if env is not None:
            env.close()
            self._env = None
        self._release()

    @property
    def env(self) -> lmdb.Environment:
        if self._env is None:
            raise StorageError(f"the store at {self.path} is closed")
        return self._env

    def _release(self) -> None:
        with _open_lock:
            _open_paths.discard(self._real)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transactions ------------------------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[lmdb.Transaction]:
        """A short read transaction. Values are buffers into the map, valid only inside it: copy what you keep."""
        txn = self._begin_read()
        try:
            yield txn
        except CORRUPTION as exc:
            raise damaged(self.path, exc) from exc
        except lmdb.Error as exc:
            raise StorageError(f"store read failed: {exc}") from exc
        finally:
            txn.abort()
            self._gate.release_read()

    def _begin_read(self) -> lmdb.Transaction:
        """A read transaction with the read gate held; another process growing the map is adopted once."""
        for _ in range(2):
            self._gate.acquire_read()
            try:
                return self.env.begin(buffers=True)
            except lmdb.MapResizedError:
                self._gate.release_read()
            except lmdb.Error as exc:
                self._gate.release_read()
                raise StorageError(f"store read failed: {exc}") from exc
            self._adopt_map_size()
        raise StorageError("store read failed: map size kept changing")

    def _write(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """Run `fn` in one write transaction and commit it (synced). A full map is grown ×2 and the
        transaction retried once; `fn` must therefore have no effects outside the transaction."""
        refuse_writes_if_damaged(self.path)
        for attempt in range(3):
            self._gate.acquire_read()
            try:
                with self.env.begin(write=True) as txn:
                    return fn(txn)
            except CORRUPTION as exc:
                raise damaged(self.path, exc) from exc
            except lmdb.MapFullError as exc:
                if attempt:
                    raise StorageError(f"store is full at {self.env.info()['map_size']} bytes") from exc
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
            self.env.set_mapsize(self.env.info()["map_size"] * 2)

    def _adopt_map_size(self) -> None:
        # another process grew the map; 0 means "take the size recorded in the file"
        with self._gate.write():
            self.env.set_mapsize(0)
