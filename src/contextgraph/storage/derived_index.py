"""Indexes for the dense spaces that need no graph of their own (docs/storage.md): a graph holds every vector in
float32 plus its links, ~2.4 KB a memory for a 512-d time space, and five of the nine dense spaces can find
their candidates without one.

    E2 E3 E4   TimelineIndex: what each vector encodes (E2 its time, E3 its phases in the day, week and year,
               E4 its session and global positions: 8-24 bytes), read back from the vector by its embedder,
               and each axis kept sorted, to walk outward from the query's coordinates (embedders.axes)
    E8 E10     BorrowedIndex: E1's graph proposes the candidates. E8 is E1 mixed with its graph neighbours and
               E10 is E1 with a modality one-hot appended, so both rank like E1 (bench_derived_spaces.py:
               recall@10 from E1's top 50, 1.000 and 0.998); it keeps only which memories it holds

Both only propose a pool; IndexSet re-scores the pool with the space's own measure, so the order is the space's
whenever its true nearest are in the pool. E8 and E10 are re-scored on the stored vectors. E2-E4 on the vectors
their embedders make from the coordinates the index holds, with no read: E4's positions are whole numbers, so
those are the stored vectors bit for bit; E3's phases and E2's times come back to float32 rounding, so their
scores differ from the stored vectors' by at most ~2e-7 and ~6e-8 (3,000 memories of a 30K store). The UTL then
measures the chosen neighbours on their stored vectors: only which of two near-equal neighbours is chosen can
differ. (E2 coordinates saved before decode_times walked up to its fastest frequency are good to ~1 s, ~1e-4 of
a score, until the index set is rebuilt.)

Labels are memory seqs and per-seq state sits in arrays indexed by seq (no per-memory Python objects). A cache,
rebuildable from the store. Not thread-safe for mutation: IndexSet serialises mutation against searches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from contextgraph.embedders import e02_temporal_recent, e03_temporal_periodic, e04_temporal_positional
from contextgraph.embedders.axes import Axis, closeness
from contextgraph.storage.seq_map import grown
from contextgraph.vectors import cosine_scores, dot_scores

Similarity = Callable[[np.ndarray, Sequence[np.ndarray]], np.ndarray]  # (query, vectors) → scores: an embedder's


class Timeline(NamedTuple):
    decode: Callable[[np.ndarray], np.ndarray]  # vectors [n, dim] → coordinates float64 [n, axes] (or [n])
    encode: Callable[[np.ndarray], np.ndarray]  # coordinates [n, axes] → the embedder's vectors [n, dim]
    axes: tuple[Axis, ...]  # closeness = Σ over the axes of kernel(gap): embedders.axes
    score: Similarity  # the measure a pool is re-scored with, on the vectors `encode` makes: the embedder's own


class Borrowed(NamedTuple):
    leader: int  # the space whose graph proposes the candidates
    score: Similarity


TIMELINES: dict[int, Timeline] = {
    2: Timeline(e02_temporal_recent.decode_times, e02_temporal_recent.encode_times, e02_temporal_recent.AXES,
                dot_scores),
    3: Timeline(e03_temporal_periodic.decode_phases, e03_temporal_periodic.encode_phases,
                e03_temporal_periodic.AXES, cosine_scores),
    4: Timeline(e04_temporal_positional.decode_positions, e04_temporal_positional.encode_positions,
                e04_temporal_positional.AXES, cosine_scores),
}
BORROWED: dict[int, Borrowed] = {8: Borrowed(1, cosine_scores), 10: Borrowed(1, cosine_scores)}
DERIVED_SCORE: dict[int, Similarity] = {**{space: t.score for space, t in TIMELINES.items()},
                                        **{space: b.score for space, b in BORROWED.items()}}
POOL_MIN, POOL_FACTOR = 64, 4  # a derived space re-scores max(64, 4k) candidates for its k nearest
_MAX_DEPTH = 16  # a timeline query's windows stop widening at this many pool sizes each way (TimelineIndex)
# the windows start at least this deep: with a small pool (size 1) and many memories on one coordinate (one
# session), 16 × size could not reach past the tie and the pool missed the nearest (a property test found it);
# IndexSet asks for at least 64, so its pools are as before
_MIN_DEPTH = 64


class _Membership:
    """Which seqs an index holds, one byte a seq, and the vectors' width (checked on add like a graph's)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._live = np.zeros(1024, dtype=bool)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _check(self, seqs: Sequence[int], matrix: np.ndarray) -> np.ndarray:
        labels = np.asarray(seqs, dtype=np.int64)
        if matrix.ndim != 2 or matrix.shape != (len(labels), self.dim):
            raise ValueError(f"vectors have shape {matrix.shape}, index wants ({len(labels)}, {self.dim})")
        return labels

    def _mark(self, labels: np.ndarray) -> None:
        self._live = grown(self._live, int(labels.max()) + 1)
        self._n += int(np.count_nonzero(~self._live[labels]))
        self._live[labels] = True

    def holds(self, seq: int) -> bool:
        return seq < len(self._live) and bool(self._live[seq])

    def remove(self, seq: int) -> None:
        if self.holds(seq):
            self._live[seq] = False
            self._n -= 1

    def seqs(self) -> np.ndarray:
        return np.flatnonzero(self._live)


class BorrowedIndex(_Membership):
    """E8, E10: answered through another space's graph (BORROWED); holds only membership."""

    def __init__(self, space: int, dim: int) -> None:
        super().__init__(dim)
        self.space = space
        self.leader = BORROWED[space].leader

    def add(self, seqs: Sequence[int], matrix: np.ndarray) -> None:
        labels = self._check(seqs, matrix)
        if len(labels):
            self._mark(labels)

    def save(self, path: Path | str) -> None:
        with open(path, "wb") as f:
            np.savez(f, space=np.int64(self.space), dim=np.int64(self.dim), seqs=self.seqs())

    @classmethod
    def load(cls, path: Path | str) -> BorrowedIndex:
        with np.load(path) as data:
            self = cls(int(data["space"]), int(data["dim"]))
            seqs = data["seqs"].astype(np.int64)
        if len(seqs):
            self._mark(seqs)
        return self


class TimelineIndex(_Membership):
    """E2, E3, E4: each memory's coordinates, decoded from its vector, and each axis's coordinates kept sorted.

    A query walks every axis outward from its own coordinate, a window of `depth` entries each way, and scores
    what the windows hold (and whatever was added since the last sort) by closeness. Anything outside every
    window is at least as far as the window's edge on each axis, so Σ bound(edge gap) caps its closeness (Fagin's
    threshold algorithm); once the pool's worst is at or above that cap the pool is exact, else the windows
    widen, up to _MAX_DEPTH pool sizes each way: past that the pool is the best of what the windows hold (E3
    in a dense year of memories, where all three phases must match; at 1M memories, 20 queries, the exact
    top 10 were all in it). Memories added since the sort wait in a tail, scored in full by every query, until it
    passes 1/64 of the sorted part: the next query then merges it in (O(n), not a re-sort). Loading sorts, so a
    query on a freshly opened store does not (≈ 1 s at 1M memories); so does `settle()`, for a rebuilt index."""

    def __init__(self, space: int, dim: int) -> None:
        super().__init__(dim)
        self.space = space
        self._timeline = TIMELINES[space]
        self._coords = np.zeros((1024, len(self._timeline.axes)), dtype=np.float64)  # by seq
        self._sorted: list[tuple[np.ndarray, np.ndarray]] | None = None  # per axis: (coordinates, seqs)
        self._tail: list[int] = []  # seqs added since the sort
        self._sorting = threading.Lock()  # queries run concurrently (IndexSet's read side) and may re-sort

    def _coordinates(self, matrix: np.ndarray) -> np.ndarray:
        coords = np.asarray(self._timeline.decode(matrix), dtype=np.float64)
        return coords.reshape(len(matrix), -1)

    def add(self, seqs: Sequence[int], matrix: np.ndarray) -> None:
        labels = self._check(seqs, matrix)
        if not len(labels):
            return
        coords = self._coordinates(matrix)
        top = int(labels.max()) + 1
        self._coords = grown(self._coords, top)
        self._live = grown(self._live, top)  # grown here, so _mark below need not copy it again
        held = self._live[labels]
        if np.any(self._coords[labels[held]] != coords[held]):
            self._sorted = None  # a memory moved: its sorted entries are stale
        self._coords[labels] = coords
        if self._sorted is not None:  # else the next query sorts everything anyway
            self._tail.extend(labels[~held].tolist())  # one held already is in the axes or the tail
        self._mark(labels)

    def vectors(self, seqs: np.ndarray) -> np.ndarray:
        """float32 [len(seqs), dim]: the held memories' vectors, made from their coordinates by the embedder."""
        return self._timeline.encode(self._coords[np.asarray(seqs, dtype=np.int64)])

    def settle(self) -> None:
        """Do now the sorting the next query would do (IndexSet calls it off the request path)."""
        self._view()

    def _view(self) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
        """The sorted axes and the unsorted tail, merging the tail in first when it has grown too long."""
        with self._sorting:
            # removed memories stay in the sorted axes (queries skip them) until they are half of them
            if self._sorted is None or len(self._sorted[0][0]) > 2 * self._n + 256:
                seqs = self.seqs()
                self._sorted = [_sorted_by(self._coords[seqs, a], seqs) for a in range(self._coords.shape[1])]
                self._tail = []
            elif len(self._tail) > max(256, self._n // 64):
                tail = np.asarray(self._tail, dtype=np.int64)
                self._sorted = [_merged(values, seqs, *_sorted_by(self._coords[tail, a], tail))
                                for a, (values, seqs) in enumerate(self._sorted)]
                self._tail = []
            return self._sorted, np.asarray(self._tail, dtype=np.int64)

    def pool(self, query: np.ndarray, size: int) -> list[int]:
        """The `size` memories nearest the query by closeness, nearest first (ties by seq)."""
        return [seq for seq, _ in self.nearest(query, size)]

    def nearest(self, query: np.ndarray, size: int) -> list[tuple[int, float]]:
        """pool() with each memory's closeness: the space's cosine to ~1e-3 (the embedder's axes), without
        making the vectors it would be re-scored on."""
        size = min(size, self._n)
        if size <= 0:
            return []
        axes = self._timeline.axes
        q = self._coordinates(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
        sorted_axes, tail = self._view()
        depth = start = max(size, _MIN_DEPTH)
        while True:
            parts, cap = [tail], 0.0
            for (values, seqs), axis, x in zip(sorted_axes, axes, q):
                window = _window(values, float(x), depth, axis.period)
                if window is None:  # this axis's window holds everything: score every memory
                    parts, cap = [self.seqs()], -np.inf
                    break
                rows, edge = window
                parts.append(seqs[rows])
                cap += axis.bound(edge)
            found = np.unique(np.concatenate(parts))
            found = found[self._live[found]]
            near = closeness(q, self._coords[found], axes)
            enough = len(found) >= size
            if enough and (depth >= _MAX_DEPTH * start
                           or np.partition(near, len(near) - size)[len(near) - size] >= cap):
                best = np.lexsort((found, -near))[:size]
                return list(zip(found[best].tolist(), near[best].tolist()))
            depth *= 4

    def save(self, path: Path | str) -> None:
        seqs = self.seqs()
        with open(path, "wb") as f:
            np.savez(f, space=np.int64(self.space), dim=np.int64(self.dim), seqs=seqs, coords=self._coords[seqs])

    @classmethod
    def load(cls, path: Path | str) -> TimelineIndex:
        with np.load(path) as data:
            self = cls(int(data["space"]), int(data["dim"]))
            seqs, coords = data["seqs"].astype(np.int64), data["coords"]
        if coords.ndim != 2 or coords.shape != (len(seqs), self._coords.shape[1]):
            raise ValueError(f"timeline index: {coords.shape} coordinates for {len(seqs)} seqs")
        if len(seqs):
            self._coords = grown(self._coords, int(seqs.max()) + 1)
            self._coords[seqs] = coords
            self._mark(seqs)
        self.settle()
        return self


def pool_size(k: int, dropped: int = 0) -> int:
    """How many candidates a derived space re-scores for its k nearest, `dropped` of which the caller leaves out."""
    return max(POOL_MIN, POOL_FACTOR * (k - dropped)) + dropped if k > 0 else 0


def candidate_pool(index: TimelineIndex | BorrowedIndex, leader: Any, query: np.ndarray, k: int,
                   dropped: int = 0) -> list[int]:
    """A derived space's candidates for its k nearest, `dropped` of which the caller leaves out: E2-E4's from the
    timeline, E8/E10's from `leader`, their leader's DenseIndex (E1's graph; None before it exists)."""
    size = pool_size(k, dropped)
    if isinstance(index, TimelineIndex):
        return index.pool(query, size)
    if leader is None or not size:
        return []
    return [seq for seq, _ in leader.search(query[: leader.dim], size) if index.holds(seq)]


def _sorted_by(values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values ascending, their seqs); equal values keep the order of `seqs`."""
    order = np.argsort(values, kind="stable")
    return values[order], seqs[order]


def _merged(values: np.ndarray, seqs: np.ndarray, more: np.ndarray, more_seqs: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted (values, seqs) runs as one; on equal values the first run's entries come first."""
    at = np.searchsorted(values, more, side="right")
    return np.insert(values, at, more), np.insert(seqs, at, more_seqs)


def _window(values: np.ndarray, x: float, depth: int, period: float | None) -> tuple[np.ndarray, float] | None:
    """The rows of sorted `values` within `depth` places of where x falls, and the gap from x to the nearest
    value outside them; None when they would hold every row. A circular axis (period) wraps around."""
    m = len(values)
    if 2 * depth >= m:
        return None
    at = int(np.searchsorted(values, x))
    if period is not None:
        rows = np.arange(at - depth, at + depth) % m
        left, right = values[(at - depth - 1) % m], values[(at + depth) % m]
        gap = np.abs(np.array([left, right]) - x) % period
        return rows, float(np.minimum(gap, period - gap).min())
    lo, hi = max(at - depth, 0), min(at + depth, m)
    edges = ([x - values[lo - 1]] if lo > 0 else []) + ([values[hi] - x] if hi < m else [])
    return np.arange(lo, hi), float(min(edges))
