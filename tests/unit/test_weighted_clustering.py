"""ClusterFit's triangles: the weighted local clustering coefficient of a memory with its nearest neighbours
(utl.delta_c.weighted_clustering) against a naive reference, its properties, and the neighbours' similarity
matrix it is given (services.engine.delta_sc_neighbours.nearest_between)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.fingerprint import SPACES
from contextgraph.services.engine.delta_sc_neighbours import nearest_between
from contextgraph.utl import delta_c as dc

unit = st.floats(0.0, 1.0, allow_nan=False)


def _naive(w, b):
    """Onnela et al. (2005): the mean over neighbour pairs of the geometric mean of the triangle's three weights."""
    c = lambda x: min(max(x, 0.0), 1.0)  # noqa: E731
    pairs = list(itertools.combinations(range(len(w)), 2))
    return sum((c(w[j]) * c(w[k]) * c(b[j][k])) ** (1 / 3) for j, k in pairs) / len(pairs)


def _symmetric(n, values):
    b = np.eye(n)
    for (j, k), v in zip(itertools.combinations(range(n), 2), values):
        b[j, k] = b[k, j] = v
    return b


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 6).flatmap(lambda n: st.tuples(st.lists(st.floats(-1.0, 1.0), min_size=n, max_size=n),
                                                      st.lists(st.floats(-1.0, 1.0), min_size=n * (n - 1) // 2,
                                                               max_size=n * (n - 1) // 2))))
def test_weighted_clustering_matches_a_naive_reference_and_stays_in_the_unit_interval(case):
    w, upper = case
    b = _symmetric(len(w), upper)
    got = dc.weighted_clustering(w, b)
    assert got == pytest.approx(_naive(w, b), abs=1e-12)
    assert 0.0 <= got <= 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(unit, min_size=3, max_size=3), st.lists(unit, min_size=3, max_size=3), st.permutations(range(3)))
def test_weighted_clustering_ignores_the_neighbours_order(w, upper, order):
    b = _symmetric(3, upper)
    p = list(order)
    assert dc.weighted_clustering(np.asarray(w)[p], b[np.ix_(p, p)]) == pytest.approx(dc.weighted_clustering(w, b))


@settings(max_examples=100, deadline=None)
@given(st.lists(unit, min_size=3, max_size=3), st.lists(unit, min_size=3, max_size=3), st.integers(0, 2), unit)
def test_weighted_clustering_grows_with_every_edge_of_its_triangles(w, upper, j, step):
    b = _symmetric(3, upper)
    closer = list(w)
    closer[j] = min(1.0, w[j] + step)
    assert dc.weighted_clustering(closer, b) >= dc.weighted_clustering(w, b) - 1e-12
    tighter = _symmetric(3, [min(1.0, v + step) if i == j else v for i, v in enumerate(upper)])
    assert dc.weighted_clustering(w, tighter) >= dc.weighted_clustering(w, b) - 1e-12


def test_weighted_clustering_edges():
    assert dc.weighted_clustering([1.0, 1.0, 1.0], np.ones((3, 3))) == pytest.approx(1.0)
    # neighbours as close to the memory, but unlike each other (each from another topic): no cluster to fit
    assert dc.weighted_clustering([0.6, 0.6, 0.6], np.eye(3)) == 0.0
    assert dc.weighted_clustering([0.6, 0.6, 0.6], np.full((3, 3), 0.7)) > 0.6
    assert math.isnan(dc.weighted_clustering([0.9], np.ones((1, 1))))
    assert math.isnan(dc.weighted_clustering([], np.zeros((0, 0))))
    assert math.isnan(dc.weighted_clustering([0.5, 0.5], np.array([[1.0, np.nan], [np.nan, 1.0]])))


class _Cosine:
    def similarity(self, q, column):
        m = np.stack(column)
        return m @ q / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))


def _unit_vector(angle):
    return np.array([math.cos(angle), math.sin(angle), 0.0])


def test_nearest_between_takes_the_k_nearest_and_their_similarities_to_each_other():
    space = SPACES[0]
    by_space = {space.id: _Cosine()}
    memory = {1: _unit_vector(0.0)}
    fps = [{1: _unit_vector(a)} for a in (1.2, 0.1, 0.8, 0.3, 2.0)]
    sims = np.array([_Cosine().similarity(memory[1], [f[1]])[0] for f in fps])
    near, between = nearest_between(by_space, space, fps, sims, 3)
    assert near == pytest.approx([math.cos(0.1), math.cos(0.3), math.cos(0.8)])
    angles = np.array([0.1, 0.3, 0.8])
    assert between == pytest.approx(np.cos(angles[:, None] - angles[None, :]))
    near, shifted = nearest_between(by_space, space, fps, sims, 3, skip=1)  # the single nearest left out
    assert near == pytest.approx([math.cos(0.3), math.cos(0.8), math.cos(1.2)])
    assert shifted[0, 1] == pytest.approx(math.cos(0.5)) and shifted[1, 2] == pytest.approx(math.cos(0.4))
    near, between = nearest_between(by_space, space, fps[:1], sims[:1], 3)
    assert near.shape == (1,) and between.shape == (1, 1)


def test_a_memory_among_a_tight_topic_fits_better_than_one_among_scattered_topics():
    space = SPACES[0]
    by_space = {space.id: _Cosine()}
    topic = [{1: _unit_vector(a)} for a in (0.50, 0.55, 0.60)]
    scattered = [{1: _unit_vector(a)} for a in (-0.9, 0.0, 0.9)]
    new_fact, unrelated = {1: _unit_vector(0.55)}, {1: _unit_vector(0.0)}

    def fit(fp, fps):
        sims = _Cosine().similarity(fp[1], [f[1] for f in fps])
        return dc.weighted_clustering(*nearest_between(by_space, space, fps, sims, 3))

    # the unrelated text is as close to its nearest as the new fact is to its topic, on average
    assert fit(new_fact, topic) > fit(unrelated, scattered)
