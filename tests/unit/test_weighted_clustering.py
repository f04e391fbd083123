"""ClusterFit's triangles: the weighted local clustering coefficient of a memory with its nearest neighbours
(utl.delta_c.weighted_clustering) against a naive reference, its properties, and the neighbours' similarity
matrix it is given (services.engine.delta_sc_neighbours.nearest_between); the idf-weighted term overlap ΔC reads
E6/E13 by (utl.delta_c.weighted_jaccard)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.fingerprint import SPACES
from contextgraph.retrieval.similarity import jaccard_many, space_similarities
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


def _cosine_space():
    space = SPACES[0]
    by_space = {space.id: _Cosine()}
    return lambda a, bs: space_similarities(by_space, space, a, bs)


def test_nearest_between_takes_the_k_nearest_and_their_similarities_to_each_other():
    similar = _cosine_space()
    memory = {1: _unit_vector(0.0)}
    fps = [{1: _unit_vector(a)} for a in (1.2, 0.1, 0.8, 0.3, 2.0)]
    sims = np.array([_Cosine().similarity(memory[1], [f[1]])[0] for f in fps])
    near, between = nearest_between(similar, fps, sims, 3)
    assert near == pytest.approx([math.cos(0.1), math.cos(0.3), math.cos(0.8)])
    angles = np.array([0.1, 0.3, 0.8])
    assert between == pytest.approx(np.cos(angles[:, None] - angles[None, :]))
    near, shifted = nearest_between(similar, fps, sims, 3, skip=1)  # the single nearest left out
    assert near == pytest.approx([math.cos(0.3), math.cos(0.8), math.cos(1.2)])
    assert shifted[0, 1] == pytest.approx(math.cos(0.5)) and shifted[1, 2] == pytest.approx(math.cos(0.4))
    near, between = nearest_between(similar, fps[:1], sims[:1], 3)
    assert near.shape == (1,) and between.shape == (1, 1)


def test_a_memory_among_a_tight_topic_fits_better_than_one_among_scattered_topics():
    similar = _cosine_space()
    topic = [{1: _unit_vector(a)} for a in (0.50, 0.55, 0.60)]
    scattered = [{1: _unit_vector(a)} for a in (-0.9, 0.0, 0.9)]
    new_fact, unrelated = {1: _unit_vector(0.55)}, {1: _unit_vector(0.0)}

    def fit(fp, fps):
        sims = _Cosine().similarity(fp[1], [f[1] for f in fps])
        return dc.weighted_clustering(*nearest_between(similar, fps, sims, 3))

    # the unrelated text is as close to its nearest as the new fact is to its topic, on average
    assert fit(new_fact, topic) > fit(unrelated, scattered)


term_sets = st.lists(st.integers(0, 30), max_size=12).map(lambda t: np.unique(np.asarray(t, dtype=np.int64)))
IDF = {t: 0.1 + (t % 7) for t in range(31)}


def _idf(terms):
    return np.array([IDF[int(t)] for t in np.asarray(terms).ravel()], dtype=np.float64)


@settings(max_examples=200, deadline=None)
@given(term_sets, st.lists(term_sets, max_size=5))
def test_weighted_jaccard_matches_a_naive_reference_and_plain_jaccard_at_unit_idf(a, others):
    got = dc.weighted_jaccard(a, others, _idf)
    for value, b in zip(got, others):
        union = set(a.tolist()) | set(b.tolist())
        shared = set(a.tolist()) & set(b.tolist())
        want = sum(IDF[t] for t in shared) / sum(IDF[t] for t in union) if union else 0.0
        assert value == pytest.approx(want, abs=1e-12)
        assert 0.0 <= value <= 1.0
        assert value == pytest.approx(dc.weighted_jaccard(b, [a], _idf)[0])  # symmetric
    plain = dc.weighted_jaccard(a, others, lambda t: np.ones(len(t)))
    assert plain == pytest.approx(jaccard_many(a, others) if others else np.zeros(0))


def test_weighted_jaccard_counts_a_shared_rare_term_above_a_shared_common_word():
    idf = {1: 0.2, 2: 0.2, 3: 3.0, 4: 3.0, 5: 3.0}.get

    def weights(terms):
        return np.array([idf(int(t)) for t in terms], dtype=np.float64)

    memory = np.array([1, 3])  # a common word and a rare one
    common, rare = np.array([1, 4]), np.array([2, 3])  # one shared term each, the same plain Jaccard
    assert jaccard_many(memory, [common])[0] == jaccard_many(memory, [rare])[0]
    got = dc.weighted_jaccard(memory, [common, rare, memory, np.array([5])], weights)
    assert got[1] > got[0] and got[2] == pytest.approx(1.0) and got[3] == 0.0
    assert dc.weighted_jaccard(np.zeros(0, np.int64), [np.zeros(0, np.int64)], weights).tolist() == [0.0]


def test_ranked_coherence_reads_sparse_spaces_by_idf_weighted_overlap():
    from contextgraph.services.engine.delta_sc_neighbours import ranked_coherence
    from contextgraph.vectors import sparse_from_counts

    space = next(s for s in SPACES if s.id == 6)
    rng = np.random.default_rng(6)
    fps = [{6: sparse_from_counts(rng.choice(30, 6, replace=False))} for _ in range(7)]
    memory = {6: sparse_from_counts(np.array([1, 2, 3, 4, 5]))}

    def idf_of(sid, terms):
        assert sid == 6
        return _idf(terms)

    sims = dc.weighted_jaccard(memory[6].indices, [f[6].indices for f in fps], _idf)
    order = np.argsort(-sims, kind="stable")[1:4]
    between = np.array([[dc.weighted_jaccard(fps[i][6].indices, [fps[j][6].indices], _idf)[0] for j in order]
                        for i in order])
    np.fill_diagonal(between, 1.0)
    conn, fit = ranked_coherence({}, space, idf_of, memory, fps, np.zeros(len(fps)), 3)  # the given sims unused
    assert conn == pytest.approx(dc.neighbourhood_closeness(sims, 3))
    assert fit == pytest.approx(dc.weighted_clustering(sims[order], between))
