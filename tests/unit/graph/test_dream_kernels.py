"""graph.dream against naive references: Hebbian updates, activations, the Poincaré ball, walks, blind spots,
sub-paths and shortcut confidence."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.graph import dream as d

unit_floats = st.floats(0.0, 1.0, allow_nan=False)


@given(st.lists(st.tuples(unit_floats, unit_floats, unit_floats), min_size=1, max_size=20))
def test_hebbian_matches_a_scalar_loop(rows):
    w, a, b = (np.array(col) for col in zip(*rows))
    got = d.hebbian(w, a, b, eta=0.01, decay=0.001, floor=0.05, cap=1.0)
    for i, (wi, ai, bi) in enumerate(rows):
        expected = min(1.0, max(0.05, wi * (1 - 0.001) + 0.01 * ai * bi))
        assert got[i] == pytest.approx(expected, abs=1e-12)


def test_hebbian_strengthens_coactive_edges_and_decays_silent_ones():
    w = np.array([0.5, 0.5, 0.05, 1.0])
    out = d.hebbian(w, np.array([1.0, 0.0, 0.0, 1.0]), np.array([0.9, 0.0, 0.0, 1.0]), 0.01, 0.001, 0.05, 1.0)
    assert out[0] > 0.5 and out[1] < 0.5  # co-active up, silent down
    assert out[2] == 0.05 and out[3] == 1.0  # floor and cap hold


def test_activations_are_the_clipped_cosine():
    rng = np.random.default_rng(0)
    cue, others = rng.normal(size=8), rng.normal(size=(5, 8))
    got = d.activations(cue, others)
    for row, value in zip(others, got):
        cos = float(row @ cue / (np.linalg.norm(row) * np.linalg.norm(cue)))
        assert value == pytest.approx(max(0.0, cos))
    assert d.activations(cue, np.zeros((0, 8))).shape == (0,)


def _naive_distance(x, y):
    """Poincaré distance, curvature −1: arcosh(1 + 2‖x − y‖² / ((1 − ‖x‖²)(1 − ‖y‖²)))."""
    return math.acosh(1 + 2 * float((x - y) @ (x - y)) / ((1 - float(x @ x)) * (1 - float(y @ y))))


@settings(max_examples=50)
@given(st.integers(0, 10_000))
def test_ball_distance_matches_the_arcosh_form(seed):
    rng = np.random.default_rng(seed)
    # points as the dream makes them (norms up to tanh(~2)); at the rim itself (1 − ‖x‖ < 1e-6) distance() clips,
    # by design, where float64 cannot tell the points apart anyway
    pts = d.exp0(rng.normal(size=(4, 6)) * 0.5)
    assert (np.linalg.norm(pts, axis=1) < 1 - 1e-3).all()
    got = d.distance(pts[0], pts)
    for j in range(4):
        assert got[j] == pytest.approx(_naive_distance(pts[0], pts[j]), rel=1e-6, abs=1e-6)


@settings(max_examples=50)
@given(st.integers(0, 10_000), st.floats(0.01, 0.5))
def test_a_step_has_the_asked_hyperbolic_length(seed, step):
    rng = np.random.default_rng(seed)
    x = d.exp0(rng.normal(size=5) * 0.5)
    v = rng.normal(size=5)
    lam = 2.0 / (1.0 - float(x @ x))
    y = d.exp_map(x, v / np.linalg.norm(v) * (step / lam))
    assert float(d.distance(x, y[None, :])[0]) == pytest.approx(step, rel=1e-4)


def test_walks_are_deterministic_for_a_seed_and_visit_real_points():
    rng = np.random.default_rng(3)
    pts = d.clip_to_ball(d.exp0(d.project(rng.normal(size=(40, 32)), 8) * 2.0))
    a = d.walk(pts, 0, np.random.default_rng(7), step=0.1, max_steps=100, temperature=2.0)
    b = d.walk(pts, 0, np.random.default_rng(7), step=0.1, max_steps=100, temperature=2.0)
    assert a == b and a[0] == 0 and all(0 <= i < 40 for i in a)
    assert all(x != y for x, y in itertools.pairwise(a))  # repeats collapsed
    assert len(set(a)) > 1  # 100 steps of 0.1 leave the start
    stopped = d.walk(pts, 0, np.random.default_rng(7), step=0.1, max_steps=100, temperature=2.0, stop=lambda: True)
    assert stopped == [0]


def test_project_keeps_the_spread_inside_the_unit_ball():
    y = d.project(np.random.default_rng(1).normal(size=(30, 16)), 4)
    assert y.shape == (30, 4) and np.linalg.norm(y, axis=1).max() == pytest.approx(1.0)


def test_blind_spots_against_brute_force():
    visited = ["a", "b", "c", "d", "a"]
    causal = {"a": {"x"}, "b": {"x"}, "c": {"y"}, "d": {"x", "y"}}
    far = {frozenset("ab"): 0.9, frozenset("ac"): 0.9, frozenset("ad"): 0.2, frozenset("bc"): 0.8,
           frozenset("bd"): 0.75, frozenset("cd"): 0.95}
    linked = {frozenset("bd")}
    got = d.blind_spots(visited, lambda p, q: far[frozenset((p, q))], causal,
                        lambda p, q: frozenset((p, q)) in linked, 0.7)
    expected = []
    order = ["a", "b", "c", "d"]
    for i, p in enumerate(order):
        for q in order[i + 1:]:
            shared = causal[p] & causal[q]
            if shared and frozenset((p, q)) not in linked and far[frozenset((p, q))] >= 0.7:
                expected.append((p, q, min(shared)))
    assert got == expected == [("a", "b", "x"), ("c", "d", "y")]


@given(st.lists(st.sampled_from("abcdefg"), min_size=0, max_size=9), st.integers(1, 4))
def test_sub_paths_are_the_contiguous_simple_pieces(path, hops):
    got = list(d.sub_paths(path, hops))
    naive = [tuple(path[i:j + 1]) for i in range(len(path)) for j in range(i + hops, len(path))
             if len(set(path[i:j + 1])) == j - i + 1]
    assert got == naive


def test_recency_sample_is_distinct_and_biased_to_the_newest():
    rng = np.random.default_rng(0)
    picks = [d.recency_sample(1000, 8, 0.8, 50, rng) for _ in range(200)]
    assert all(len(set(p.tolist())) == len(p) == 8 for p in picks)
    newest = np.mean([np.mean(p < 50) for p in picks])
    assert 0.75 < newest < 0.9  # 0.8 from the window plus the uniform share's 5 %
    assert sorted(d.recency_sample(3, 8, 0.8, 50, rng).tolist()) == [0, 1, 2]


def test_shortcut_confidence_and_weight():
    assert d.shortcut_confidence(5, 5, 0.7) == pytest.approx(0.7)  # SPEC §10: ≥ 0.7 once traversed 5 times
    assert d.shortcut_confidence(50, 5, 0.7) == pytest.approx(0.97)
    assert d.shortcut_confidence(10, 5, 0.7) == pytest.approx(0.85)
    assert d.shortcut_confidence(4, 5, 0.7) == pytest.approx(0.7)  # capped: the count gates, not the confidence
    assert d.shortcut_confidence(0, 5, 0.7) == 0.0
    assert d.path_weight([0.5, 0.8, 0.9]) == pytest.approx(0.36)


def test_walk_rank_is_the_share_of_others_nearer_in_the_ball_from_the_closer_side():
    rng = np.random.default_rng(7)
    points = d.clip_to_ball(d.exp0(rng.normal(size=(12, 4)) * 0.4))
    pairs = [(0, 1), (2, 9), (5, 5 + 1)]
    got = d.walk_rank(points, pairs)
    for (i, j), share in zip(pairs, got):
        def nearer(a, b):
            dist = d.distance(points[a], points)
            return sum(1 for k in range(12) if k not in (a, b) and dist[k] < dist[b]) / 10
        assert share == pytest.approx(min(nearer(i, j), nearer(j, i)))
    assert 0.0 <= got.min() and got.max() < 1.0


def test_walk_rank_is_zero_for_each_others_nearest_and_ignores_the_scale():
    points = np.array([[0.0, 0.0], [0.01, 0.0], [0.3, 0.3], [-0.3, 0.2], [0.1, -0.4]])
    assert d.walk_rank(points, [(0, 1)])[0] == 0.0
    far = d.walk_rank(points, [(2, 3)])[0]
    assert far > 0.0
    assert d.walk_rank(points * 0.1, [(2, 3)])[0] == pytest.approx(far)  # a tighter store, the same ranks
