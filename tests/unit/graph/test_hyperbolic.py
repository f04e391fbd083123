"""graph.hyperbolic against naive per-pair references (Ganea et al. 2018 eq. 26, 28) and its properties."""

import math

import numpy as np
import pytest

from contextgraph.graph import hyperbolic as hb


def naive_psi(x, k):
    n = math.sqrt(sum(v * v for v in x))
    return math.asin(min(1.0, k * (1 - n * n) / n))


def naive_xi(x, y):
    dot = sum(a * b for a, b in zip(x, y))
    nx2, ny2 = sum(a * a for a in x), sum(b * b for b in y)
    diff = math.sqrt(sum((a - b) ** 2 for a, b in zip(x, y)))
    num = dot * (1 + nx2) - nx2 * (1 + ny2)
    den = math.sqrt(nx2) * diff * math.sqrt(1 + nx2 * ny2 - 2 * dot)
    return math.acos(max(-1.0, min(1.0, num / den)))


def random_ball(rng, n, d):
    v = rng.normal(size=(n, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True) * rng.uniform(0.15, 0.95, size=(n, 1))


def test_matches_naive_reference():
    rng = np.random.default_rng(7)
    for k in (0.1, 0.3):
        pts = random_ball(rng, 12, 5)
        psi = hb.half_aperture(pts, k)
        xi = hb.cone_angles(pts)
        inside, conf = hb.entailment(pts, k)
        for i in range(len(pts)):
            assert psi[i] == pytest.approx(naive_psi(pts[i], k), abs=1e-9)
            for j in range(len(pts)):
                if i == j:
                    assert not inside[i, j]
                    continue
                ref = naive_xi(pts[i], pts[j])
                assert xi[i, j] == pytest.approx(ref, abs=1e-6)
                assert inside[i, j] == (ref <= naive_psi(pts[i], k))
                if inside[i, j]:
                    assert conf[i, j] == pytest.approx(1 - ref / naive_psi(pts[i], k), abs=1e-6)


def test_cones_narrow_away_from_origin_and_contain_their_axis():
    k = 0.1
    axis = np.array([1.0, 0.0, 0.0])
    norms = np.array([hb.min_radius(k), 0.2, 0.4, 0.6, 0.9])
    psi = hb.half_aperture(axis * norms[:, None], k)
    assert psi[0] == pytest.approx(math.pi / 2, abs=1e-6)
    assert np.all(np.diff(psi) < 0)  # origin-near points have the widest cones
    inside, conf = hb.entailment(axis * norms[:, None], k)
    # further out along the same axis: inside every cone before it, on its axis, never the reverse
    for i in range(len(norms)):
        for j in range(len(norms)):
            assert inside[i, j] == (j > i)
            if j > i:
                assert conf[i, j] == pytest.approx(1.0, abs=1e-6)


def test_never_own_ancestor_and_no_nan_for_zero_vectors():
    vectors = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 0.0, 0.0]])
    g = hb.generality(vectors, 0.15)
    pts = hb.to_ball(hb.pull_to_axis(vectors, 0.2), g, hb.min_radius(0.1), 0.9)
    inside, conf = hb.entailment(pts, 0.1)
    for arr in (g, pts, inside, conf, hb.cone_angles(pts), hb.half_aperture(pts, 0.1)):
        assert not np.isnan(np.asarray(arr, dtype=float)).any()
    assert not np.diag(inside).any()
    assert np.all(np.linalg.norm(pts, axis=1) < 1)
    origin = hb.entailment(np.zeros((2, 3)), 0.1)
    assert not np.isnan(origin[1]).any() and not np.diag(origin[0]).any()


def test_generality_ranks_the_hub_first():
    hub = np.array([1.0, 1.0, 1.0, 0.0])
    leaves = np.array([[1.0, 0.2, 0.0, 0.3], [0.0, 1.0, 0.2, 0.3], [0.2, 0.0, 1.0, 0.3]])
    g = hb.generality(np.vstack([leaves, hub]), 0.15)
    assert g[-1] == 1.0 and g.min() == 0.0 and np.all((g >= 0) & (g <= 1))
    assert hb.generality(hub[None, :], 0.15).tolist() == [1.0]
    assert hb.soft_degree([0.9, 0.5, 0.1], 0.3) == pytest.approx(1.4)
    assert hb.rank_generality([0.2, 3.0, 1.0]).tolist() == [0.0, 1.0, 0.5]
    pts = hb.to_ball(np.vstack([leaves, hub]), g, 0.1, 0.9)
    assert np.linalg.norm(pts[-1]) == pytest.approx(0.1)  # the most general sits nearest the origin


def test_pull_to_axis_narrows_angles_and_keeps_order():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(6, 8))
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    w = hb.pull_to_axis(v, 0.3)
    assert np.allclose(np.linalg.norm(w, axis=1), 1.0)
    assert np.allclose(hb.pull_to_axis(v, 1.0), u)
    assert (w @ w.T)[np.triu_indices(6, 1)].min() > (u @ u.T)[np.triu_indices(6, 1)].min()
