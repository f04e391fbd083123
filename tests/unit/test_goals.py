"""Stage 4's goal kernel (teleology.goals) against a naive reference: alignments, the query's goal, the bounded
re-rank factors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.teleology.goals import Goal, GoalSet, goal_alignments, query_goal, rerank_factors


def naive_alignment(v: list[float], c: list[float], ref: float) -> float:
    nv = math.sqrt(sum(x * x for x in v))
    nc = math.sqrt(sum(x * x for x in c))
    cos = 0.0 if nv == 0 or nc == 0 else sum(a * b for a, b in zip(v, c)) / (nv * nc)
    return min(max(cos / ref, 0.0), 1.0)


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 10_000), st.floats(0.1, 0.9))
def test_goal_alignments_match_the_naive_reference(n, g, seed, ref):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 8))
    centroids = np.stack([unit(rng.normal(size=8)) for _ in range(g)])
    refs = np.full(g, ref)
    got = goal_alignments(vectors, centroids, refs)
    assert got.shape == (n, g) and ((got >= 0) & (got <= 1)).all()
    for i in range(n):
        for j in range(g):
            assert got[i, j] == pytest.approx(naive_alignment(list(vectors[i]), list(centroids[j]), ref), abs=1e-9)


def test_a_typical_member_aligns_fully_and_a_zero_vector_not_at_all():
    c = unit(np.array([1.0, 1.0, 0.0]))
    member = np.array([1.0, 0.6, 0.2])  # cosine ~0.94 to c, above a typical member's 0.8
    goals = GoalSet((Goal("g", "label", c, 0.8, 3),))
    assert goals.alignments(np.stack([member, np.zeros(3)])).tolist() == [[1.0], [0.0]]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.floats(0.05, 0.95), st.floats(0, 0.99))
def test_rerank_factors_are_bounded_monotone_and_pivot_on_the_threshold(alignments, pivot, bound):
    a = np.array(sorted(alignments))
    f = rerank_factors(a, pivot, bound)
    assert ((f >= 1 - bound - 1e-12) & (f <= 1 + bound + 1e-12)).all()
    assert (np.diff(f) >= -1e-12).all()  # more aligned never ranks lower
    assert rerank_factors(np.array([pivot]), pivot, bound)[0] == pytest.approx(1.0)


def test_rerank_bound_outside_zero_one_is_refused():
    with pytest.raises(ValueError):
        rerank_factors(np.array([0.5]), 0.5, 1.0)


def test_the_query_belongs_to_its_best_goal_only_above_the_pivot():
    assert query_goal(np.array([0.3, 0.7, 0.6]), 0.55) == 1
    assert query_goal(np.array([0.3, 0.5]), 0.55) is None  # off every goal: stage 4 stays neutral
    assert query_goal(np.array([]), 0.55) is None
    assert query_goal(np.array([0.6, 0.6]), 0.55) == 0  # a tie goes to the first (the largest goal)
