"""The opened store of one data directory, behind one `await ready()`.

Owns the store (source of truth: LMDB in the data directory by default, or PostgreSQL for a postgresql:// store
URL, docs/storage.md), the per-space indexes (LMDB: caches that catch up from the store's operation log before every
search, so a second server process's writes are seen; PostgreSQL: the database's own HNSW and postings), the
one writer thread, the fitted UTL models over the store's contents, and the cognitive engine's saved state
(loaded with the store, saved beside it). Every service reaches storage through this handle and sees only the
protocols of storage.base, never a backend class: the backend is chosen here, once.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import anyio

from contextgraph.background import in_background
from contextgraph.config import Settings, store_location
from contextgraph.constitution import Constitution
from contextgraph.errors import NodeNotFound, StorageError
from contextgraph.log import get_logger
from contextgraph.services.engine import engine_state
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.delta_sc import DeltaScComputer
from contextgraph.services.engine.history import EngineHistory
from contextgraph.services.engine.store_model_file import FILE_NAME as MODEL_FILE
from contextgraph.services.engine.workspace import WorkspaceService
from contextgraph.services.runtime.access_counts import AccessCounts
from contextgraph.services.runtime.after_answer import AfterAnswer
from contextgraph.services.runtime.e8_refresh import E8Refresher
from contextgraph.services.runtime.engine_turn import EngineTurn
from contextgraph.services.runtime.space_refresh import SpaceRefresh
from contextgraph.services.runtime.tombstones import expired_ids, purge_expired
from contextgraph.storage.base import MemoryRecord, MemoryStore, SearchIndexes
from contextgraph.storage.indexes import IndexSet
from contextgraph.storage.lmdb_store import LmdbStore
from contextgraph.storage.maintenance import INDEX_DIR, STORE_DIR
from contextgraph.storage.writer import Writer

T = TypeVar("T")
_log = get_logger("storage")


class StoreHandle:
    def __init__(self, settings: Settings, constitution: Constitution, cognition: CognitiveState,
                 workspace: WorkspaceService, history: EngineHistory | None = None) -> None:
        self.home = Path(settings.home)
        self.store_url = settings.store_url
        self.backend, where = store_location(settings.store_url, self.home)
        # LMDB: the directory holding store/ and indexes/ (the data directory unless lmdb:///path names another)
        self.store_home = Path(where) if self.backend == "lmdb" else self.home
        self.constitution = constitution
        self.cognition = cognition
        self.workspace = workspace
        self.history = history  # the dashboard's bounded engine history, saved with the engine state
        self.delta_sc = DeltaScComputer(constitution)
        # what configures every ΔS/ΔC computer this handle makes (Meta-UTL's λ, ATC's Johari threshold)
        self._delta_sc_setup: list[Callable[[DeltaScComputer], None]] = []
        self.e8 = E8Refresher(constitution["graph"]["e8_refresh"])
        # a space whose embedder changed (E7's code model), re-embedded in the background once the model loads
        self.space_refresh = SpaceRefresh()
        # the cognitive work that follows an answer, in order, on a thread of its own (docs/engine.md#after-the-answer)
        self.after_answer = AfterAnswer()
        self._recovery_window_s = float(constitution["curation"]["recovery_window_days"]) * 86400.0
        self._engine_save_interval = float(constitution["gwt"]["persistence"]["save_interval_seconds"])
        self._engine_saved_at = 0.0
        self._lock = threading.Lock()
        self._store: MemoryStore | None = None
        self._indexes: SearchIndexes | None = None
        self._writer: Writer | None = None
        self._saved_seq = 0
        # more engine state saved beside it, one document each (name → object with to_doc, load_doc, dirty):
        # the neuromodulators, the dream's reports and shortcut counts (attached by the composition root). A
        # part with `save_interval_seconds` is saved at most that often by the periodic save (always on close
        # and by save_engine).
        self.parts: dict[str, Any] = {}
        self._part_saved_at: dict[str, float] = {}
        self.turn = EngineTurn()  # one engine state across the processes on this store
        self.accesses = AccessCounts(float(constitution["memory"]["access_flush_seconds"]))

    # -- lifecycle -------------------------------------------------------------------------------------------
    def open(self) -> None:
        """Open the store and indexes (idempotent; loading large indexes takes seconds). No model is loaded."""
        with self._lock:
            if self._store is not None:
                return
            if in_background():  # a refit or refresh outliving close(): a writer it started would run lowered
                raise StorageError("the store is closed")
            self.home.mkdir(parents=True, exist_ok=True)
            store, indexes = self._open_backend()
            self._writer = Writer()
            self._indexes = indexes
            self._saved_seq = indexes.applied_seq  # what the files on disk reflect
            self._store = store
            # the UTL's last full fits (store model, TransE), kept between runs: LMDB beside store/ and indexes/,
            # PostgreSQL in the data directory (a per-host cache; services.engine.store_model_file)
            self.delta_sc.saved.path = self.store_home / MODEL_FILE
            self._load_engine(store)
            now, window = time.time(), self._recovery_window_s
            if store.graph_read(lambda g: expired_ids(g, now, window)):  # a write only when there is work
                try:
                    purged = store.graph_write(lambda g: purge_expired(g, now, window))
                    _log.info("expired tombstones purged", count=len(purged))
                except StorageError as exc:  # a damaged store still opens for reading; the purge can wait
                    _log.warning("expired tombstones not purged", error=exc.message)

    def _load_engine(self, store: MemoryStore) -> None:
        self.turn.loaded(store)
        engine_state.load(store, self.cognition, self.workspace, self.history)
        for name, part in self.parts.items():
            if saved := store.get_document(name):
                part.load_doc(saved)

    def _open_backend(self) -> tuple[MemoryStore, SearchIndexes]:
        """The store and its search: LMDB with process-local indexes caught up from its log, or PostgreSQL,
        whose indexes are in the database but for a few kept in the process (imported only then: the LMDB default
        needs no psycopg)."""
        if self.backend == "postgresql" and self.store_url:
            from contextgraph.storage.postgres.search import PgIndexes
            from contextgraph.storage.postgres.store import PgStore

            pg = PgStore(self.store_url)
            try:  # E2-E4, E6, E13 indexed in the process (PgIndexes), a cache kept where LMDB keeps its indexes
                return pg, PgIndexes(pg, self.store_home / INDEX_DIR)
            except BaseException:
                pg.close()
                raise
        self.store_home.mkdir(parents=True, exist_ok=True)
        lmdb = LmdbStore(self.store_home / STORE_DIR)
        try:
            return lmdb, IndexSet.open(self.store_home / INDEX_DIR, lmdb)
        except BaseException:
            lmdb.close()
            raise

    async def ready(self) -> StoreHandle:
        """open() off the event loop: what every async caller awaits before touching the store."""
        if self._store is None:
            await anyio.to_thread.run_sync(self.open)
        return self

    async def read(self, fn: Callable[[MemoryStore], T]) -> T:
        """`fn(store)`, a read of the store, in a worker thread: never on the event loop, which serves every
        client (a read costs microseconds on a warm LMDB, tens of milliseconds on a cold page cache or a busy
        PostgreSQL). The store is opened first, off the loop too."""
        await self.ready()
        store = self.store
        return await anyio.to_thread.run_sync(lambda: fn(store))

    async def identity(self) -> dict[str, Any]:
        """Which store this is (the store is opened first): the backend, the store's own id (a uuid4 kept in the
        store since it was created), and where it lives, the data directory and the LMDB store directory with
        symbolic links resolved (or the PostgreSQL URL without its password). `contextgraph call` compares it with
        the store it was asked for before it sends a tool call to a running server (shell/call.py)."""
        await self.ready()
        return await anyio.to_thread.run_sync(self._identity)  # resolving links reads the file system

    def _identity(self) -> dict[str, Any]:
        found: dict[str, Any] = {"backend": self.backend, "store_id": getattr(self.store, "store_id", None) or None,
                                 "data_dir": os.path.realpath(self.home)}
        if self.backend == "lmdb":
            found["store_dir"] = os.path.realpath(self.store_home / STORE_DIR)
        elif self.store_url:
            from contextgraph.storage.postgres.connect import redact

            found["database"] = redact(self.store_url)
        return found

    @property
    def is_open(self) -> bool:
        return self._store is not None

    def close(self) -> None:
        """Run the work queued after answers (it reads the store and moves the engine state saved here), then
        save what is cached (engine state, indexes when they changed) and close the store."""
        self.after_answer.close()
        with self._lock:
            store, indexes, writer = self._store, self._indexes, self._writer
            if store is None or indexes is None or writer is None:
                return
            try:
                self.space_refresh.stop()  # its batch in flight finishes; what is left resumes at the next start
                self.delta_sc.close()  # no background refit may read the store once it closes
                if self.cognition.dirty or self.workspace.dirty or (self.history is not None and self.history.dirty):
                    try:
                        engine_state.save(store, self.cognition, self.workspace, self.history)
                        self.turn.stamp(store)
                    except Exception:  # the memories are safe; only the engine's latest state is lost
                        _log.exception("saving the engine state on close failed")
                try:
                    self._save_parts(store, only_dirty=True)
                except Exception:
                    _log.exception("saving the engine's parts on close failed")
                try:
                    self.accesses.flush(store)
                except Exception:  # bookkeeping only: the memories are safe
                    _log.exception("writing the access counts on close failed")
                writer.close()
                # Saving is a cache write (large at scale): skip it when nothing changed since the load.
                indexes.catch_up(store)
                if indexes.applied_seq != self._saved_seq:
                    indexes.save(self.store_home / INDEX_DIR)
            finally:
                store.close()
                self._store = None
                self.delta_sc = DeltaScComputer(self.constitution)  # fitted models belong to the store just closed
                self.space_refresh = SpaceRefresh()
                for setup in self._delta_sc_setup:
                    setup(self.delta_sc)

    # -- what services use -----------------------------------------------------------------------------------
    @property
    def store(self) -> MemoryStore:
        self.open()
        assert self._store is not None
        return self._store

    @property
    def indexes(self) -> SearchIndexes:
        self.open()
        assert self._indexes is not None
        return self._indexes

    @property
    def writer(self) -> Writer:
        self.open()
        assert self._writer is not None
        return self._writer

    def refresh_e8(self, memory_ids: Iterable[str]) -> None:
        """Queue these memories' E8 (graph) for a background refresh: their edges changed (services.e8_refresh)."""
        self.e8.enqueue(self.store, self.writer, memory_ids)

    async def settled(self) -> None:
        """Returns once the work queued after earlier answers has run: its effects are in the engine state."""
        await self.after_answer.settled()

    def configure_delta_sc(self, setup: Callable[[DeltaScComputer], None]) -> None:
        """Apply `setup` to the ΔS/ΔC computer now and to each one made after a reopen."""
        self._delta_sc_setup.append(setup)
        setup(self.delta_sc)

    async def live_record(self, memory_id: str) -> MemoryRecord:
        """The live memory with this id, or NodeNotFound (-32012) with the hint every tool gives."""
        record = await self.read(lambda store: store.get(memory_id))
        if record is None:
            raise NodeNotFound(f"No live memory has id {memory_id}. search_graph finds memories by content.",
                               node_id=memory_id)
        return record

    def count_accesses(self, seqs: list[int]) -> None:
        """A search's answer: one access of each memory, written with the others in a batch when one is due."""
        if self.accesses.record(seqs):
            try:
                future = self.writer.submit_future(self.accesses.flush, self.store)
            except StorageError:  # the writer closed under us: close writes what is left
                return
            future.add_done_callback(_log_flush_failure)

    async def save_engine(self) -> None:
        """Write the engine state to the store now: durable when this returns."""
        await self.ready()
        self._engine_saved_at = time.monotonic()
        await self.writer.submit(self._save_engine_now, self.store, False)

    def _save_engine_now(self, store: MemoryStore, periodic: bool) -> None:
        if periodic and (stamp := self.turn.others_saved(store)) is not None:
            self._load_engine(store)  # another process saved since: its state is the one state (engine_turn.py)
            self.turn.adopted += 1
            _log.debug("engine state adopted from another process", by=stamp.get("by", "?")[:8])
            return
        engine_state.save(store, self.cognition, self.workspace, self.history)
        self._save_parts(store, True, periodic)
        self.turn.stamp(store)

    def _save_parts(self, store: MemoryStore, only_dirty: bool, periodic: bool = False) -> None:
        now = time.monotonic()
        for name, part in self.parts.items():
            if only_dirty and not getattr(part, "needs_save", getattr(part, "dirty", True)):
                continue
            interval = getattr(part, "save_interval_seconds", 0.0) if periodic else 0.0
            if now - self._part_saved_at.get(name, -math.inf) < interval:
                continue
            try:
                store.put_document(name, part.to_doc())  # to_doc marks the part clean: undo that on failure
            except Exception:
                if hasattr(part, "dirty"):
                    part.dirty = True  # so the next save, and close, write it again
                raise
            self._part_saved_at[name] = now

    async def save_engine_after_commit(self) -> None:
        """The periodic save that follows an operation, queued on the writer and not waited for. The answer
        does not depend on it, and the engine state is up to an interval stale by design (close saves it): but
        waiting made whichever call came due pay the save, once a second (at 100K ~21 ms to build and encode
        ATC's ~800 KiB state, then a synced write). A failure is logged, never the caller's error (the client
        would retry a store and keep it twice), and the next save retries."""
        if time.monotonic() - self._engine_saved_at < self._engine_save_interval:
            return
        await self.ready()
        self._engine_saved_at = time.monotonic()
        try:
            self.writer.submit_future(self._save_engine_now, self.store, True).add_done_callback(_log_save_failure)
        except StorageError:  # the writer closed under us: close saves the engine state itself
            pass


def _log_save_failure(done: Future[None]) -> None:
    if not done.cancelled() and done.exception() is not None:
        _log.error("saving the engine state failed; the next operation or close retries",
                   exc_info=done.exception())


def _log_flush_failure(done: Future[None]) -> None:
    if not done.cancelled() and done.exception() is not None:
        _log.warning("writing the access counts failed; they are lost (bookkeeping only)", exc_info=done.exception())
