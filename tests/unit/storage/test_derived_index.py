"""The timeline index (E2-E4 without their vectors): its pools against a brute-force closeness over every
memory, through adds, removes, re-sorts and a save/load; and the borrowed index's bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.embedders import e02_temporal_recent as e2
from contextgraph.embedders import e03_temporal_periodic as e3
from contextgraph.embedders import e04_temporal_positional as e4
from contextgraph.embedders.axes import closeness
from contextgraph.storage.derived_index import BorrowedIndex, TimelineIndex

NOW = 1_764_000_000.0


def _vectors(space: int, rng: np.random.Generator, n: int, spread_s: float) -> np.ndarray:
    times = NOW - rng.uniform(0, spread_s, n)
    if space == 2:
        return e2.TemporalRecentEmbedder().embed_times(times)
    if space == 3:
        emb = e3.TemporalPeriodicEmbedder()
        return np.stack([emb.embed_time(t) for t in times])
    return e4.TemporalPositionalEmbedder().embed_positions(rng.integers(0, 40, n), rng.integers(0, 20_000, n))


def _brute(index: TimelineIndex, query: np.ndarray, size: int) -> list[int]:
    """The pool by definition: every live memory ranked by closeness, ties by seq."""
    seqs = index.seqs()
    axes = index._timeline.axes
    q = index._coordinates(query.reshape(1, -1))[0]
    near = closeness(q, index._coords[seqs], axes)
    return seqs[np.lexsort((seqs, -near))][:size].tolist()


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([2, 4]), st.integers(0, 2**32 - 1), st.integers(1, 120))
def test_e2_e4_pools_are_the_exact_nearest_through_adds_and_removes(space, seed, size):
    rng = np.random.default_rng(seed)
    index = TimelineIndex(space, 512)
    vectors = _vectors(space, rng, 1_500, 3e7)
    index.add(range(1, 1_001), vectors[:1_000])
    index.pool(vectors[0], size)  # sorts
    index.add(range(1_001, 1_501), vectors[1_000:])  # an unsorted tail
    for seq in rng.choice(np.arange(1, 1_501), 200, replace=False).tolist():
        index.remove(seq)
    assert len(index) == 1_300
    for q in rng.choice(len(vectors), 5, replace=False):
        assert index.pool(vectors[q], size) == _brute(index, vectors[q], size)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(1, 400), min_size=2, max_size=8))
def test_tails_merged_into_the_sorted_axes_keep_every_pool_exact(seed, chunks):
    """Adds in chunks with queries between them (each query may merge the tail in), removes, and re-adds of
    removed memories: the pools stay the brute-force ones and the sorted axes stay sorted."""
    rng = np.random.default_rng(seed)
    vectors = _vectors(4, rng, sum(chunks), 3e7)
    index = TimelineIndex(4, 512)
    start = 0
    for n in chunks:
        index.add(range(start + 1, start + n + 1), vectors[start:start + n])
        start += n
        gone = rng.choice(np.arange(1, start + 1), min(20, start // 4), replace=False)
        for seq in gone.tolist():
            index.remove(seq)
        back = gone[: len(gone) // 2]
        index.add(back.tolist(), vectors[back - 1])
        q = int(rng.integers(0, start))
        assert index.pool(vectors[q], 10) == _brute(index, vectors[q], 10)
    sorted_axes, tail = index._view()
    held = set(index.seqs().tolist())
    for values, seqs in sorted_axes:
        assert np.all(np.diff(values) >= 0)
        assert held <= set(seqs.tolist()) | set(tail.tolist())


def test_loading_and_settling_sort_so_that_a_query_need_not():
    rng = np.random.default_rng(5)
    vectors = _vectors(2, rng, 2_000, 1e6)
    index = TimelineIndex(2, 512)
    index.add(range(1, 2_001), vectors)
    assert index._sorted is None  # a fresh index sorts lazily ...
    index.settle()  # ... or when IndexSet asks, after a rebuild
    assert index._sorted is not None and len(index._sorted[0][0]) == 2_000 and not index._tail


def test_e3_pool_holds_the_exact_top_ten_in_a_dense_year():
    rng = np.random.default_rng(3)
    vectors = _vectors(3, rng, 40_000, 3.15e7)
    index = TimelineIndex(3, 512)
    index.add(range(1, len(vectors) + 1), vectors)
    recall = [len(set(_brute(index, vectors[q], 10)) & set(index.pool(vectors[q], 64))) / 10
              for q in rng.choice(len(vectors), 30, replace=False)]
    assert np.mean(recall) >= 0.98


def test_a_moved_memory_is_found_where_it_now_is_and_save_load_keeps_the_pools(tmp_path):
    rng = np.random.default_rng(4)
    vectors = _vectors(2, rng, 500, 1e6)
    index = TimelineIndex(2, 512)
    index.add(range(1, 501), vectors)
    far = e2.TemporalRecentEmbedder().embed_times(np.array([NOW + 5e7]))
    assert index.pool(far[0], 1) != [7]
    index.add([7], far)  # re-added at another time: the sorted axes are stale and must be redone
    assert index.pool(far[0], 1) == [7]
    index.save(tmp_path / "e02.timeline.npz")
    loaded = TimelineIndex.load(tmp_path / "e02.timeline.npz")
    assert len(loaded) == len(index) == 500 and loaded._sorted is not None  # sorted on load, not on a query
    for q in (0, 100, 499):
        assert loaded.pool(vectors[q], 30) == index.pool(vectors[q], 30)


def test_a_vector_of_the_wrong_width_is_refused():
    with pytest.raises(ValueError, match="512"):
        TimelineIndex(2, 512).add([1], np.zeros((1, 384), np.float32))
    with pytest.raises(ValueError, match="390"):
        BorrowedIndex(10, 390).add([1], np.zeros((1, 384), np.float32))


def test_borrowed_index_holds_membership_only(tmp_path):
    index = BorrowedIndex(8, 384)
    index.add([3, 5, 9], np.zeros((3, 384), np.float32))
    index.add([5], np.zeros((1, 384), np.float32))  # again: still one entry
    index.remove(3)
    index.remove(4)  # never held: nothing happens
    assert len(index) == 2 and index.holds(5) and not index.holds(3)
    index.save(tmp_path / "e08.borrowed.npz")
    loaded = BorrowedIndex.load(tmp_path / "e08.borrowed.npz")
    assert loaded.seqs().tolist() == [5, 9] and loaded.leader == 1


@pytest.mark.parametrize("space", [2, 3, 4])
def test_a_timeline_makes_its_memories_vectors_from_their_coordinates(space):
    """What IndexSet re-scores a timeline pool on, with no read: E4's stored vectors bit for bit, E2's and E3's to
    float32 rounding."""
    rng = np.random.default_rng(space)
    vectors = _vectors(space, rng, 300, 2 * 365 * 86_400.0)
    index = TimelineIndex(space, vectors.shape[1])
    seqs = np.arange(1, 301) * 3  # labels need not be dense
    index.add(seqs.tolist(), vectors)
    made = index.vectors(seqs[::-1])
    assert made.dtype == np.float32 and made.shape == vectors.shape
    if space == 4:
        assert np.array_equal(made, vectors[::-1])
    else:
        assert np.abs(made - vectors[::-1]).max() < 1e-6


@pytest.mark.parametrize(("space", "shared"), [(2, 0.85), (3, 1.0), (4, 0.6)])
def test_nearest_is_the_pool_with_its_closeness_which_orders_like_the_cosine(space, shared):
    """What the UTL's neighbourhood asks (IndexSet.search_many(closeness=True)): pool()'s memories in pool()'s
    order with their closeness, the stand-in the index walks by. E3's equals the cosine of the stored vectors to
    ~1e-3; E2's (−|Δt|) and E4's (a log fall-off) order like it, so their nearest 20 are mostly the nearest 20 by
    cosine (measured: E2 17-20 of 20, E4 12-18; the UTL's leave-one-out calibration asks the same way)."""
    rng = np.random.default_rng(10 + space)
    vectors = _vectors(space, rng, 400, 2 * 365 * 86_400.0)
    index = TimelineIndex(space, vectors.shape[1])
    index.add(range(1, 401), vectors)
    every, overlaps = index.seqs(), []
    for q in rng.choice(len(vectors), 20, replace=False):
        found = index.nearest(vectors[q], 20)
        assert [seq for seq, _ in found] == index.pool(vectors[q], 20)
        closenesses = np.array([c for _, c in found])
        assert np.all(np.diff(closenesses) <= 0)
        cosines = index.vectors(every) @ vectors[q]
        by_cosine = set(every[np.argsort(-cosines, kind="stable")[:20]].tolist())
        overlaps.append(len(by_cosine & {seq for seq, _ in found}) / 20)
        if space == 3:
            assert np.abs(closenesses - index.vectors(np.array([s for s, _ in found])) @ vectors[q]).max() < 2e-3
    assert np.mean(overlaps) >= shared
