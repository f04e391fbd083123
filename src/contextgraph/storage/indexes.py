"""One index per searchable space, kept in step with the store through its operation log.

    E1 E5 E7 E11     DenseIndex (hnswlib, cosine)
    E2 E3 E4         TimelineIndex: the time or positions each vector encodes; candidates by nearness in them
    E8 E10           BorrowedIndex: candidates from E1's graph (both spaces rank like E1)
    E6 E13           SparseIndex (inverted, BM25 at query time)
    E9               BinaryIndex (exact Hamming)
    E12              none: its token vectors stay in the store, fetched per candidate for rerank

A derived space (storage.derived_index) keeps no vectors: its candidates, a pool of max(64, 4k), are re-scored on
their stored vectors with the space's measure (cosine; E2's is the dot product), which is why searching one needs
the store. That is what lets a million memories fit in memory (benchmarks/README).

The indexes are caches: `rebuild` makes them from the store, `catch_up` applies the oplog entries after
`applied_seq` (another process's writes included), `save`/`load` spare a rebuild at start-up. Mutation takes the
write side of a readers-writer lock, a search the read side space by space (docs/architecture.md#one-writer):
no space is searched while it changes, and a search in several spaces may see a memory added between two.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contextgraph.background import in_background
from contextgraph.errors import DimensionMismatch
from contextgraph.fingerprint import Fingerprint, Sparse, Vector, dense, sparse
from contextgraph.log import get_logger
from contextgraph.storage import save_dirs
from contextgraph.storage.base import MemoryStore
from contextgraph.storage.binary_index import BinaryIndex
from contextgraph.storage.derived_index import DERIVED_SCORE, BorrowedIndex, TimelineIndex, candidate_pool
from contextgraph.storage.hnsw_index import DenseIndex
from contextgraph.storage.index_feed import rewritten_spaces, scan_batches
from contextgraph.storage.index_files import (
    DIGESTS,
    FILES,
    INDEXED_SPACES,
    MANIFEST_VERSION,
    SPARSE_SPACES,
    Index,
    kind_of,
    load_entry,
    read_manifest,
    saved_digests,
    saved_set_problems,
    verify_set,
)
from contextgraph.storage.locks import RWLock
from contextgraph.storage.sparse_index import SparseIndex

__all__ = ["INDEXED_SPACES", "IndexSet", "saved_set_problems"]  # what callers import from here

_BATCH = 512  # oplog entries (and fingerprints) per catch-up round; rebuild adds this many per index call

Progress = Callable[[int, int], None]  # (memories done, total)
_log = get_logger("storage")


class IndexSet:
    def __init__(
        self,
        store: MemoryStore | None = None,
        dims: Mapping[int, int] | None = None,
        *,
        M: int = 16,
        ef_construction: int = 200,
        ef_search: int = 64,
        spaces: Sequence[int] = INDEXED_SPACES,
    ) -> None:
        """`store`, when given, is caught up with before every search. `dims` fixes dense spaces' dimensions (bits
        for E9; else the first fingerprint's). `spaces`: those kept (PostgreSQL's: the timeline and sparse ones)."""
        self.store = store
        self.spaces = tuple(sorted(spaces))
        self.applied_seq = 0  # every oplog entry up to here is reflected in the indexes
        self.store_id = getattr(store, "store_id", None)
        self._dims: dict[int, int] = dict(dims or {})
        self._params = {"M": M, "ef_construction": ef_construction, "ef_search": ef_search}
        self._indexes: dict[int, Index] = {}
        self._ahead: set[int] = set()  # seqs applied directly (apply) beyond applied_seq: catch_up skips them
        self.replayed = 0  # oplog entries load() applied on top of the saved files
        self._lock = RWLock()
        self._catching_up = threading.Lock()

    # --- queries -----------------------------------------------------------------------------------------------

    def search(self, space: int, query: Vector, k: int, max_df: float = 1.0,
               **bm25: float) -> list[tuple[int, float]]:
        """(seq, score) best first; score is the space's similarity (cosine, dot, BM25, 1 − normalised Hamming).
        An index with nothing in it yet answers []. `max_df` and `bm25` (k1, b; sparse spaces only): see
        SparseIndex.search. A derived space (E2-E4, E8, E10) needs the set's store for its vectors."""
        return self.search_many({space: query}, k, max_df, **bm25)[space]

    def search_many(self, queries: Mapping[int, Vector], k: int, max_df: float = 1.0,
                    **bm25: float) -> dict[int, list[tuple[int, float]]]:
        """search() in several spaces ({space: query} → {space: hits}) after one catch-up, under one read lock."""
        return self._search_many(queries, k, max_df, False, bm25)

    def nearest_many(self, queries: Mapping[int, Vector], k: int, max_df: float = 1.0,
                     dropped: int = 0) -> dict[int, list[tuple[int, float]]]:
        """search_many() for the UTL's neighbourhood (it scores the neighbours itself): E2-E4 by the timeline's
        closeness (E3's is the cosine to ~1e-3, E2's and E4's near it: test_derived_index), not a pool 4× larger
        re-scored on vectors made for it (at 1K 0.8-1.0 → ~0.2 ms a space). `dropped` of the `k` the caller leaves
        out (itself, its topic): E8/E10 re-score max(64, 4·(k − dropped)) + dropped, not 4k (a topic of 60: 300)."""
        return self._search_many(queries, k, max_df, True, {}, dropped)

    def _search_many(self, queries: Mapping[int, Vector], k: int, max_df: float, closeness: bool,
                     bm25: Mapping[str, float], dropped: int = 0) -> dict[int, list[tuple[int, float]]]:
        if bad := [space for space in queries if space not in self.spaces]:
            raise ValueError(f"E{bad[0]} has no index here (E12 is scored per candidate from the store)")
        # a lowered thread (contextgraph.background) searches the indexes as they are: no request waits behind it
        if self.store is not None and not in_background():
            self.catch_up()
        out: dict[int, list[tuple[int, float]]] = {}
        pools: dict[int, list[int]] = {}
        # a read lock per space: a writer (a store's apply) waits for one space's search, not for a neighbourhood's
        for space, query in queries.items():
            with self._lock.read():
                index = self._indexes.get(space)
                if index is None:
                    out[space] = []
                elif isinstance(index, SparseIndex):
                    out[space] = index.search(sparse(query), k, max_df, **bm25)
                elif closeness and isinstance(index, TimelineIndex):
                    out[space] = index.nearest(dense(query), k)
                elif isinstance(index, TimelineIndex | BorrowedIndex):
                    leader = self._indexes.get(getattr(index, "leader", -1))
                    pools[space] = candidate_pool(index, leader if isinstance(leader, DenseIndex) else None,
                                                  dense(query), k, dropped)
                else:
                    out[space] = index.search(dense(query), k)
        if pools:
            out.update(self._rescore({space: dense(queries[space]) for space in pools}, pools, k))
        return out

    def _rescore(self, queries: Mapping[int, np.ndarray], pools: Mapping[int, list[int]],
                 k: int) -> dict[int, list[tuple[int, float]]]:
        """Each derived space's k nearest: its pool scored with the space's measure (ties by seq). E2-E4 on vectors
        made from the timeline's coordinates (no read); E8/E10 on the stored ones, one read of both pools, no lock."""
        stored = {space: pool for space, pool in pools.items()
                  if not isinstance(self._indexes[space], TimelineIndex)}
        union = list(dict.fromkeys(seq for pool in stored.values() for seq in pool))
        found = self._source(None).fingerprint_columns(union, list(stored)) if union else None
        row_of = {seq: i for i, seq in enumerate(found.seqs)} if found is not None else {}
        found_seqs = np.asarray(found.seqs if found is not None else [], dtype=np.int64)
        out: dict[int, list[tuple[int, float]]] = {}
        for space, pool in pools.items():
            index = self._indexes[space]
            vectors: Any  # [n, dim]: made from the coordinates, or a column of the read
            if isinstance(index, TimelineIndex):
                seqs = np.asarray(pool, dtype=np.int64)
                with self._lock.read():
                    vectors = index.vectors(seqs)
            else:
                rows = np.array([row_of[seq] for seq in pool if seq in row_of], dtype=np.intp)
                seqs = found_seqs[rows]
                vectors = found[space][rows] if found is not None and len(rows) else None
            if vectors is None or not len(seqs):
                out[space] = []
                continue
            scores = DERIVED_SCORE[space](queries[space], vectors)
            best = np.lexsort((seqs, -scores))[:k]
            out[space] = list(zip(seqs[best].tolist(), scores[best].tolist()))
        return out

    def score_sparse(self, space: int, query: Sparse, docs: Sequence[Sparse], **bm25: float) -> np.ndarray:
        """float64 [len(docs)] BM25 scores of given documents, with this space's index statistics (df, avgdl)."""
        return self._read_sparse(space, lambda index: index.score(query, docs, **bm25))

    def sparse_idf(self, space: int, terms: np.ndarray) -> np.ndarray:
        """float64 BM25 idf of each term with this space's index statistics (the idf score_sparse weighs by)."""
        return self._read_sparse(space, lambda index: index.idf(terms))

    def _read_sparse(self, space: int, read: Callable[[SparseIndex], np.ndarray]) -> np.ndarray:
        """`read` of a sparse space's index (an empty one before it has any memory), under the read lock."""
        if space not in SPARSE_SPACES:
            raise ValueError(f"E{space} is not a sparse space")
        with self._lock.read():
            index = self._indexes.get(space)
            return read(index if isinstance(index, SparseIndex) else SparseIndex())

    def sizes(self) -> dict[int, int]:
        """Entries per space, after catching up (like a search): what the store holds, not what was applied."""
        if self.store is not None:
            self.catch_up()
        with self._lock.read():
            return {space: len(index) for space, index in sorted(self._indexes.items())}

    # --- mutation ----------------------------------------------------------------------------------------------

    def apply(self, seq: int, fingerprint: Fingerprint) -> None:
        """Index one memory now (the writer, right after its put), ahead of `catch_up`, which will skip it.
        A seq that catch_up has already passed is left alone: catch_up indexed it, or saw it deleted (by
        another process, between this put and now) and must not see it come back."""
        with self._lock.write():
            if seq <= self.applied_seq or seq in self._ahead:
                return
            self._add(self._indexes, [seq], [fingerprint])
            self._ahead.add(seq)

    def remove(self, seq: int) -> None:
        with self._lock.write():
            for index in self._indexes.values():
                index.remove(seq)

    def catch_up(self, store: MemoryStore | None = None) -> int:
        """Apply the oplog after `applied_seq`; returns how many entries were read (one short read if none)."""
        store = self._source(store)
        if store.last_seq() <= self.applied_seq:
            return 0
        done = 0
        with self._catching_up:  # one catch-up at a time; whoever waited finds the work done
            while True:
                entries = store.oplog_since(self.applied_seq, limit=_BATCH)
                if not entries:
                    return done
                puts = [e.memory_seq for e in entries if e.op == "put" and e.memory_seq not in self._ahead]
                deletes = [e.memory_seq for e in entries if e.op == "delete"]
                # Read outside the lock; a fingerprint deleted meanwhile comes back None and its delete entry
                # follows in the log. Seqs are never reused, so applying puts before deletes is order-safe.
                fps = store.fingerprints(puts, spaces=self.spaces) if puts else []
                found = [(s, fp) for s, fp in zip(puts, fps) if fp is not None]
                rewritten = rewritten_spaces(store, [e for e in entries if e.op == "rewrite"], self.spaces)
                with self._lock.write():
                    # `apply` may have indexed some of them since `puts` was taken (it runs on another thread)
                    found = [(s, fp) for s, fp in found if s not in self._ahead]
                    self._add(self._indexes, [s for s, _ in found], [fp for _, fp in found])
                    for seqs, fps in rewritten:  # re-adding a seq replaces its entry in every index kind
                        self._add(self._indexes, seqs, fps)
                    for seq in deletes:
                        for index in self._indexes.values():
                            index.remove(seq)
                    self.applied_seq = entries[-1].seq
                    self._ahead = {s for s in self._ahead if s > self.applied_seq}
                done += len(entries)

    def _source(self, store: MemoryStore | None) -> MemoryStore:
        """The store to read: the one given, else the one this set was opened on."""
        source = store if store is not None else self.store
        if source is None:
            raise ValueError("this IndexSet has no store: pass one")
        return source

    def _add(
        self, indexes: dict[int, Index], seqs: list[int], fps: Sequence[Fingerprint], capacity: int = 0
    ) -> None:
        if not seqs:
            return
        for space in self.spaces:
            column = [fp[space] for fp in fps if space in fp]
            if not column:
                continue
            if len(column) != len(seqs):
                raise DimensionMismatch(f"E{space} is missing from some fingerprints", space=space)
            index = indexes.get(space)
            if index is None:
                index = indexes[space] = self._new_index(space, column[0], max(capacity, len(seqs)))
            if isinstance(index, SparseIndex):
                index.add(seqs, [sparse(v) for v in column])
                continue
            matrix = np.stack([dense(v) for v in column])
            width = matrix.shape[1] * (8 if isinstance(index, BinaryIndex) else 1)
            expected = index.bits if isinstance(index, BinaryIndex) else index.dim
            if width != expected:
                raise DimensionMismatch(
                    f"E{space} vectors have {width} dimensions, the index has {expected}; run `contextgraph reindex`",
                    space=space, got=width, expected=expected,
                )
            index.add(seqs, matrix)

    def _new_index(self, space: int, first: Vector, capacity: int) -> Index:
        kind = kind_of(space)
        if kind == "sparse":
            return SparseIndex()
        if kind in ("timeline", "borrowed"):
            dim = self._dims.get(space, int(dense(first).shape[0]))
            return TimelineIndex(space, dim) if kind == "timeline" else BorrowedIndex(space, dim)
        if kind == "binary":
            return BinaryIndex(self._dims.get(space, int(dense(first).shape[0]) * 8), capacity=capacity)
        dim = self._dims.get(space, int(dense(first).shape[0]))
        return DenseIndex(dim, "cosine", capacity=max(capacity, 1024), **self._params)

    # --- whole-set operations ----------------------------------------------------------------------------------

    def rebuild(self, store: MemoryStore | None = None, progress: Progress | None = None) -> None:
        """Build every index from `store.scan()` and swap them in; searches (and catch-ups) keep using the old
        ones meanwhile. Then catch up with whatever was written during the build."""
        store = self._source(store)
        start = store.last_seq()  # the build reflects the log up to here; catch_up does the rest
        total = store.count()
        fresh: dict[int, Index] = {}
        done = 0
        if progress:
            progress(0, total)
        for seqs, fps in scan_batches(store.scan(spaces=self.spaces), start, _BATCH):
            self._add(fresh, seqs, fps, capacity=total)
            done += len(seqs)
            if progress:
                progress(done, total)
        for index in fresh.values():
            if isinstance(index, TimelineIndex):
                index.settle()  # sort now, not in the first search after the swap
        with self._catching_up, self._lock.write():
            self._indexes = fresh
            self.applied_seq = start
            self._ahead = set()
            self.store_id = getattr(store, "store_id", None)
        self.catch_up(store)

    def save(self, directory: Path | str) -> None:
        """Write every index and a manifest into a fresh sibling directory, then rename it into place
        (save_dirs.publish). Another process saving at the same time may win instead; either result is valid
        (catch_up covers the lag)."""

        def fill(tmp: Path) -> None:
            with self._lock.read():  # no mutation while writing: the files and applied_seq agree
                spaces = {}
                for space, index in sorted(self._indexes.items()):
                    name = FILES[kind_of(space)].format(space)
                    index.save(tmp / name)
                    spaces[str(space)] = {"kind": kind_of(space), "file": name, "size": len(index),
                                          DIGESTS: saved_digests(tmp, name)}
                manifest = {"version": MANIFEST_VERSION, "store_id": self.store_id, "applied_seq": self.applied_seq,
                            "ahead": sorted(self._ahead), "params": self._params, "spaces": spaces,
                            "indexed": list(self.spaces)}
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))

        save_dirs.publish(Path(directory), fill)

    @classmethod
    def load(
        cls, directory: Path | str, store: MemoryStore | None = None, *, ef_search: int | None = None, **params
    ) -> IndexSet | None:
        """The saved set, caught up with `store`; None when there is none, any part of it is unreadable, or it
        belongs to another store (then rebuild). Retries a few times in case another process is replacing it
        right now."""
        directory = Path(directory)
        problem: Exception | None = None
        for attempt in range(3):
            if attempt:
                time.sleep(0.05)  # back off: a concurrent save's rename window is short
            try:
                manifest = read_manifest(directory)
                if manifest.get("version") != MANIFEST_VERSION or \
                        manifest.get("indexed", list(INDEXED_SPACES)) != sorted(params.get("spaces", INDEXED_SPACES)):
                    return None  # an older layout, or a set of other spaces: rebuilt
                verify_set(directory, list(manifest["spaces"].values()))
                indexes = {int(space): load_entry(directory, entry, ef_search, verified=True)
                           for space, entry in manifest["spaces"].items()}
                break
            except FileNotFoundError as exc:
                if not directory.exists() and not any(directory.parent.glob(f".{directory.name}.old-*")):
                    return None
                problem = exc
            # A cache: whatever fails to load (a truncated zip, a short hnsw graph, bad JSON) is rebuilt from
            # the store, never fatal; numpy, zipfile, zlib, hnswlib and json each fail their own way.
            except Exception as exc:
                problem = exc
        else:
            _log.warning("saved indexes unreadable; rebuilding them from the store", directory=str(directory),
                         problem=f"{type(problem).__name__}: {problem}")
            return None
        if store is not None and (manifest["store_id"] != getattr(store, "store_id", None)
                                  or manifest["applied_seq"] > store.last_seq()):
            return None
        saved = dict(manifest["params"])
        if ef_search is not None:
            saved["ef_search"] = ef_search
        saved.update(params)
        self = cls(store, **saved)
        self._indexes, self.applied_seq, self.store_id = indexes, manifest["applied_seq"], manifest["store_id"]
        self._ahead = set(manifest["ahead"])
        if store is not None:
            self.replayed = self.catch_up(store)
        return self

    @classmethod
    def open(cls, directory: Path | str, store: MemoryStore, progress: Progress | None = None, **params) -> IndexSet:
        """The saved set if usable, else one rebuilt from the store, saved when it differs from the files (rebuilt,
        or the oplog replayed into it); what killed saves left behind is removed first (save_dirs)."""
        for path in save_dirs.remove_stale(Path(directory)):
            _log.info("removed a stale partial index save", path=str(path))
        loaded = cls.load(directory, store, **params)
        if loaded is not None:
            if loaded.replayed:  # writes the files never saw (a killed server): save them, or every start replays
                _log.info("replayed the operation log into the saved indexes; saving them", entries=loaded.replayed,
                          applied_seq=loaded.applied_seq)
                loaded.save(directory)
            return loaded
        fresh = cls(store, **params)
        fresh.rebuild(store, progress)
        fresh.save(directory)
        return fresh
